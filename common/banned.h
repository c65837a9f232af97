/* banned.h: functions that invite buffer overruns or unseeded randomness.
 * Included by every module header (through error.h); using one of these is a
 * compile error. Use snprintf, memcpy with explicit sizes, and the seeded
 * GSL RNG in common/rng.h. (After git's banned.h.) */
#ifndef TS_BANNED_H
#define TS_BANNED_H

#define TS_BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) TS_BANNED(strcpy)
#undef strcat
#define strcat(x, y) TS_BANNED(strcat)
#undef sprintf
#define sprintf(...) TS_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) TS_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) TS_BANNED(strtok)
#undef gets
#define gets(x) TS_BANNED(gets)
#undef rand
#define rand() TS_BANNED(rand)
#undef srand
#define srand(x) TS_BANNED(srand)

#endif
