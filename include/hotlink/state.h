/* hotlink/state.h: variables whose values survive a hot reload.
 *
 *   #include <hotlink/state.h>
 *   static int HOTLINK_STATE frames = 0;
 *   static struct Camera HOTLINK_STATE camera = {...};
 *
 * HOTLINK_STATE places the variable in a section of its own, where
 * hotlink's HotModule finds it. On reload(), after the new version is
 * mapped and before it is published, each state variable of the new version
 * that has a counterpart in the current one (the same name in the same
 * translation unit, or the same external name) receives the current value,
 * when both have the same layout: the same members, offsets and types as the
 * debug info describes them (compile with -g to have them checked), else the
 * same size. A variable that no longer fits, or that holds a pointer into
 * the old version's image, refuses the reload by default (StateMismatch;
 * the old version keeps serving); see hotlink/loader/hot_module.h for the
 * other choices. State added in the new version starts at its initializer;
 * state that disappeared is dropped.
 *
 * Use it on variables with static storage duration (file scope, or static
 * locals). The section is writable data: do not combine it with const.
 *
 * Platforms: the loader reads ELF (Linux) today. The COFF and Mach-O
 * spellings below place the variable the same way, so a kernel compiles for
 * every target; their loaders do not carry state yet.
 */
#ifndef HOTLINK_STATE_H
#define HOTLINK_STATE_H

#if defined(__APPLE__) && defined(__MACH__)
/* Mach-O: a section of the __DATA segment. */
#define HOTLINK_STATE __attribute__((section("__DATA,__hotlink_state"), used))
#elif defined(_MSC_VER) && !defined(__clang__)
/* MSVC: a COFF section declared once, then allocated into. */
#pragma section(".hlstate", read, write)
#define HOTLINK_STATE __declspec(allocate(".hlstate"))
#elif defined(_WIN32)
/* COFF with clang or MinGW gcc (section names are at most 8 bytes). */
#define HOTLINK_STATE __attribute__((section(".hlstate"), used))
#else
/* ELF. */
#define HOTLINK_STATE __attribute__((section(".hotlink_state"), used))
#endif

/* The section's name as the loader looks it up (ELF). */
#define HOTLINK_STATE_SECTION ".hotlink_state"

#endif /* HOTLINK_STATE_H */
