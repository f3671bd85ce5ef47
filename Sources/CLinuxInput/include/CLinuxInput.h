#ifndef DOSETAP_CLINUXINPUT_H
#define DOSETAP_CLINUXINPUT_H
/* Placeholder until the evdev shims land (see Sources/DoseTapLinux/Input). */
#include <linux/input.h>
#endif
