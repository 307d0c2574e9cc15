/*
 * ringtrace.h - tracepoints for C (C99 and later) and C++ (C++11 and later).
 *
 *   RINGTRACE_EVENT(shop, order,
 *                   RINGTRACE_U32(worker), RINGTRACE_STRING(path),
 *                   RINGTRACE_SEQ(u16, samples));
 *
 *   void serve(uint32_t w, const char *p, const uint16_t *s, uint32_t ns)
 *   {
 *           ringtrace_tracepoint(shop, order, w, p, s, ns);
 *   }
 *
 * RINGTRACE_EVENT(provider, name, FIELD...); declares an event with 0 to 16
 * fields, at file scope, in each translation unit that fires it (a project
 * header is the usual place). It defines only static objects, so any number
 * of translation units and shared objects may repeat a declaration; two
 * declarations of one provider:name are the same event iff their signatures
 * (field kinds and names, in order) are equal.
 * ringtrace_tracepoint(provider, name, ARGS...) fires the event, with one
 * argument per field (two for a RINGTRACE_SEQ) in field order;
 * ringtrace_tracepoint_enabled(provider, name) is nonzero while it records,
 * to guard work done only to compute arguments.
 *
 * Who runs this: any thread of the traced program, in any context where it
 * may call a function, signal handlers included. The probe never locks,
 * allocates or makes a system call; when the ring buffer has no room the
 * event is dropped and counted (ringtrace-abi.h).
 *
 * What it costs: a disabled tracepoint is one relaxed load and a branch
 * predicted not taken, and its arguments are not evaluated. An enabled one
 * evaluates them once and calls an out-of-line probe that computes the
 * payload size (one strlen per string), reserves room in the per-CPU ring
 * buffer, copies each field with memcpy and commits.
 *
 * Fields (encoding: docs/design.md section 3, byte-packed, native endian):
 *
 *   RINGTRACE_S8(n) .. RINGTRACE_S64(n)   int8_t .. int64_t        "s32 n"
 *   RINGTRACE_U8(n) .. RINGTRACE_U64(n)   uint8_t .. uint64_t      "u32 n"
 *   RINGTRACE_X8(n) .. RINGTRACE_X64(n)   uintN_t, shown in hex    "x32 n"
 *   RINGTRACE_PTR(n)                      const void *, 8 bytes    "ptr n"
 *   RINGTRACE_F32(n), RINGTRACE_F64(n)    float, double            "f64 n"
 *   RINGTRACE_STRING(n)                   const char *, with NUL   "string n"
 *                                         (NULL is written "(null)")
 *   RINGTRACE_ARRAY(kind, n, N)           const T *n, N elements   "u8 n[4]"
 *                                         (NULL is written as zeros)
 *   RINGTRACE_SEQ(kind, n)                const T *n,              "u16 n[]"
 *                                         uint32_t n_count (u32 count,
 *                                         then the elements; NULL: count 0)
 *
 * kind is one of s8 s16 s32 s64 u8 u16 u32 u64 x8 x16 x32 x64; N is one
 * integer literal (or a macro expanding to one), because it is spelled into
 * the signature.
 *
 * Stacks: RINGTRACE_EVENT_STACK(provider, name, FIELD...); declares an
 * event that also records the stack of the code that fires it (fired with
 * ringtrace_tracepoint as usual), and `ringtrace record --stacks` gives
 * every event one. Such an event ends with two more fields: stack_id, the
 * 4-byte id of the stack in the trace's stack map (`ringtrace stackmap
 * TRACE` prints them), and stack, the return addresses themselves, empty
 * unless the map was full (stack_id is then 0xffffffff). The capture
 * (libunwind's fast trace, about 200 ns for 16 frames) is paid only while
 * the event records. docs/stackmap.md has the details.
 *
 * A translation unit whose events are recorded with stacks most of the
 * time (under `record --stacks`, as the allocation tracer's are) may
 * `#define RINGTRACE_INLINE_SUFFIX 1` before including this header: its
 * probes then write the stack suffix on their inline path, as those of
 * events declared with a stack do (a third of the cost of a stack that
 * repeats), at the price of a larger probe.
 *
 * An event with no fields is declared and fired with nothing after its
 * name. ISO C before C23 and C++ before C++20 want an argument there, so
 * under -Wpedantic those two uses (and only those) are warned about.
 */
#ifndef RINGTRACE_H
#define RINGTRACE_H

#include <ringtrace/ringtrace-abi.h>
#include <ringtrace/ringtrace-api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ringtrace__register_section() and ringtrace__unregister_section()
 * (declared in ringtrace-abi.h) are called by every translation unit that
 * includes this header, from a constructor and a destructor, with the
 * bounds of the "ringtrace_events" section of the object (executable or
 * shared object) it was linked into. The library counts calls per section:
 * the first registers the events, the last (at exit or dlclose) forgets them.
 */

/*
 * Defined by the linker, because the section name is a C identifier, around
 * the pointers that the events of this object put there. Weak so that an
 * object without events links (both are then null); hidden so that each
 * shared object sees its own section.
 */
extern struct ringtrace_event_desc *const __start_ringtrace_events[]
	__attribute__((weak, visibility("hidden")));
extern struct ringtrace_event_desc *const __stop_ringtrace_events[]
	__attribute__((weak, visibility("hidden")));

#ifdef __cplusplus
}
#endif

static void ringtrace__register_tu(void) __attribute__((constructor));
static void ringtrace__register_tu(void)
{
	struct ringtrace_event_desc *const *start = __start_ringtrace_events;
	struct ringtrace_event_desc *const *stop = __stop_ringtrace_events;

	if (start != stop)
		ringtrace__register_section(start, stop);
}

static void ringtrace__unregister_tu(void) __attribute__((destructor));
static void ringtrace__unregister_tu(void)
{
	struct ringtrace_event_desc *const *start = __start_ringtrace_events;
	struct ringtrace_event_desc *const *stop = __stop_ringtrace_events;

	if (start != stop)
		ringtrace__unregister_section(start, stop);
}

/* ---- field macros ------------------------------------------------------
 *
 * Each expands to a tuple (class, T, signature, name, N) that the operations
 * below take apart. The signature is spelled here, from the tokens as
 * written, so that a macro named like a kind cannot change it.
 */

#define RINGTRACE_S8(n)     (RINGTRACE__SCALAR, int8_t,   "s8 " #n,  n, ~)
#define RINGTRACE_S16(n)    (RINGTRACE__SCALAR, int16_t,  "s16 " #n, n, ~)
#define RINGTRACE_S32(n)    (RINGTRACE__SCALAR, int32_t,  "s32 " #n, n, ~)
#define RINGTRACE_S64(n)    (RINGTRACE__SCALAR, int64_t,  "s64 " #n, n, ~)
#define RINGTRACE_U8(n)     (RINGTRACE__SCALAR, uint8_t,  "u8 " #n,  n, ~)
#define RINGTRACE_U16(n)    (RINGTRACE__SCALAR, uint16_t, "u16 " #n, n, ~)
#define RINGTRACE_U32(n)    (RINGTRACE__SCALAR, uint32_t, "u32 " #n, n, ~)
#define RINGTRACE_U64(n)    (RINGTRACE__SCALAR, uint64_t, "u64 " #n, n, ~)
#define RINGTRACE_X8(n)     (RINGTRACE__SCALAR, uint8_t,  "x8 " #n,  n, ~)
#define RINGTRACE_X16(n)    (RINGTRACE__SCALAR, uint16_t, "x16 " #n, n, ~)
#define RINGTRACE_X32(n)    (RINGTRACE__SCALAR, uint32_t, "x32 " #n, n, ~)
#define RINGTRACE_X64(n)    (RINGTRACE__SCALAR, uint64_t, "x64 " #n, n, ~)
#define RINGTRACE_F32(n)    (RINGTRACE__SCALAR, float,    "f32 " #n, n, ~)
#define RINGTRACE_F64(n)    (RINGTRACE__SCALAR, double,   "f64 " #n, n, ~)
#define RINGTRACE_PTR(n)    (RINGTRACE__PTR, const void *, "ptr " #n, n, ~)
#define RINGTRACE_STRING(n) (RINGTRACE__STRING, const char *, "string " #n, n, ~)
#define RINGTRACE_ARRAY(kind, n, N) \
	(RINGTRACE__ARRAY, RINGTRACE__T_##kind, #kind " " #n "[" RINGTRACE__STR(N) "]", n, N)
#define RINGTRACE_SEQ(kind, n) \
	(RINGTRACE__SEQ, RINGTRACE__T_##kind, #kind " " #n "[]", n, ~)

/* Element types of arrays and sequences; any other kind is an unknown type. */
#define RINGTRACE__T_s8  int8_t
#define RINGTRACE__T_s16 int16_t
#define RINGTRACE__T_s32 int32_t
#define RINGTRACE__T_s64 int64_t
#define RINGTRACE__T_u8  uint8_t
#define RINGTRACE__T_u16 uint16_t
#define RINGTRACE__T_u32 uint32_t
#define RINGTRACE__T_u64 uint64_t
#define RINGTRACE__T_x8  uint8_t
#define RINGTRACE__T_x16 uint16_t
#define RINGTRACE__T_x32 uint32_t
#define RINGTRACE__T_x64 uint64_t

/* ---- operations on a field ---------------------------------------------
 *
 * The descriptor and the probe are built by applying operations to every
 * field in order: _SIG (its part of the signature), and per class _PARAM
 * (its parameters), _PREP (locals computed once, before the size is known),
 * _SIZE ("+ bytes", added to a uint64_t so that no sum can wrap) and _WRITE
 * (copy to ringtrace__p and advance it). The class NONE stands for an empty
 * field list.
 *
 * No cast that C++ -Wold-style-cast or -Wuseless-cast would flag, since
 * these expand in the user's code.
 */

#define RINGTRACE__OP_SIG(cls, T, sig, n, N)   sig
#define RINGTRACE__OP_PARAM(cls, T, sig, n, N) cls##_PARAM(T, n, N)
#define RINGTRACE__OP_PREP(cls, T, sig, n, N)  cls##_PREP(T, n, N)
#define RINGTRACE__OP_SIZE(cls, T, sig, n, N)  cls##_SIZE(T, n, N)
#define RINGTRACE__OP_WRITE(cls, T, sig, n, N) cls##_WRITE(T, n, N)

#define RINGTRACE__NONE_PARAM(T, n, N) void
#define RINGTRACE__NONE_PREP(T, n, N)
#define RINGTRACE__NONE_SIZE(T, n, N)
#define RINGTRACE__NONE_WRITE(T, n, N)

#define RINGTRACE__SCALAR_PARAM(T, n, N) T n
#define RINGTRACE__SCALAR_PREP(T, n, N)
#define RINGTRACE__SCALAR_SIZE(T, n, N)  + sizeof(T)
#define RINGTRACE__SCALAR_WRITE(T, n, N) \
	memcpy(ringtrace__p, &n, sizeof(T)); \
	ringtrace__p += sizeof(T);

/* The address as a u64 whatever the pointer width, as the format says. */
#define RINGTRACE__PTR_PARAM(T, n, N) T n
#define RINGTRACE__PTR_PREP(T, n, N) \
	const uint64_t ringtrace__v_##n = RINGTRACE__PTR_BITS(n);
#define RINGTRACE__PTR_SIZE(T, n, N)  + 8
#define RINGTRACE__PTR_WRITE(T, n, N) \
	memcpy(ringtrace__p, &ringtrace__v_##n, 8); \
	ringtrace__p += 8;

/*
 * The NUL is stored rather than copied: if another thread changes the
 * string between strlen and memcpy, the record still holds exactly the
 * string its size says.
 */
#define RINGTRACE__STRING_PARAM(T, n, N) T n
#define RINGTRACE__STRING_PREP(T, n, N) \
	const char *const ringtrace__s_##n = n ? n : "(null)"; \
	const size_t ringtrace__l_##n = strlen(ringtrace__s_##n);
#define RINGTRACE__STRING_SIZE(T, n, N)  + ringtrace__l_##n + 1
#define RINGTRACE__STRING_WRITE(T, n, N) \
	memcpy(ringtrace__p, ringtrace__s_##n, ringtrace__l_##n); \
	ringtrace__p[ringtrace__l_##n] = '\0'; \
	ringtrace__p += ringtrace__l_##n + 1;

/*
 * N goes into the signature as spelled, so it has to be one literal token:
 * pasting it into the name of the typedef fails to compile for an
 * expression, and the typedef's bound rejects N < 1.
 */
#define RINGTRACE__ARRAY_PARAM(T, n, N) const T *n
#define RINGTRACE__ARRAY_PREP(T, n, N) \
	typedef char ringtrace__##n##_len_##N[(N) > 0 ? 1 : -1] RINGTRACE__UNUSED;
#define RINGTRACE__ARRAY_SIZE(T, n, N)  + sizeof(T) * (N)
#define RINGTRACE__ARRAY_WRITE(T, n, N) \
	if (n) \
		memcpy(ringtrace__p, n, sizeof(T) * (N)); \
	else \
		memset(ringtrace__p, 0, sizeof(T) * (N)); \
	ringtrace__p += sizeof(T) * (N);

/*
 * A null sequence is written empty; the test before memcpy is there because
 * copying from a null pointer is undefined even for 0 bytes. The size is
 * computed in 64 bits (a 32-bit size_t could wrap); the write cannot wrap,
 * since an event that big is never reserved.
 */
#define RINGTRACE__SEQ_PARAM(T, n, N) const T *n, uint32_t n##_count
#define RINGTRACE__SEQ_PREP(T, n, N) \
	const uint32_t ringtrace__c_##n = n ? n##_count : 0;
#define RINGTRACE__SEQ_SIZE(T, n, N) \
	+ 4 + RINGTRACE__CAST(uint64_t, ringtrace__c_##n) * sizeof(T)
#define RINGTRACE__SEQ_WRITE(T, n, N) \
	memcpy(ringtrace__p, &ringtrace__c_##n, 4); \
	ringtrace__p += 4; \
	if (ringtrace__c_##n) \
		memcpy(ringtrace__p, n, ringtrace__c_##n * sizeof(T)); \
	ringtrace__p += ringtrace__c_##n * sizeof(T);

/* ---- applying an operation to every field ------------------------------
 *
 * RINGTRACE__FE_k(op, sep, f1, ..., fk, ~) expands to
 * `op f1 sep() op f2 ... sep() op fk`; the trailing ~ keeps the variable
 * part of every call non-empty, as C99 requires.
 */

#define RINGTRACE__FE_0(op, sep, ...) op(RINGTRACE__NONE, ~, "", ~, ~)
#define RINGTRACE__FE_1(op, sep, a, ...) op a
#define RINGTRACE__FE_2(op, sep, a, ...) op a sep() RINGTRACE__FE_1(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_3(op, sep, a, ...) op a sep() RINGTRACE__FE_2(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_4(op, sep, a, ...) op a sep() RINGTRACE__FE_3(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_5(op, sep, a, ...) op a sep() RINGTRACE__FE_4(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_6(op, sep, a, ...) op a sep() RINGTRACE__FE_5(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_7(op, sep, a, ...) op a sep() RINGTRACE__FE_6(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_8(op, sep, a, ...) op a sep() RINGTRACE__FE_7(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_9(op, sep, a, ...) op a sep() RINGTRACE__FE_8(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_10(op, sep, a, ...) op a sep() RINGTRACE__FE_9(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_11(op, sep, a, ...) op a sep() RINGTRACE__FE_10(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_12(op, sep, a, ...) op a sep() RINGTRACE__FE_11(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_13(op, sep, a, ...) op a sep() RINGTRACE__FE_12(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_14(op, sep, a, ...) op a sep() RINGTRACE__FE_13(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_15(op, sep, a, ...) op a sep() RINGTRACE__FE_14(op, sep, __VA_ARGS__)
#define RINGTRACE__FE_16(op, sep, a, ...) op a sep() RINGTRACE__FE_15(op, sep, __VA_ARGS__)

#define RINGTRACE__SEP_NONE()
#define RINGTRACE__SEP_COMMA() ,
#define RINGTRACE__SEP_SEMI()  ";"

/*
 * The number of fields, 0 to 16. An empty list arrives as one empty
 * argument, recognised because `x ()` is a parenthesised group while x is
 * not. More than 16 fields name a macro that does not exist.
 */
#define RINGTRACE__NFIELDS(...) \
	RINGTRACE__CAT(RINGTRACE__NFIELDS_IF_EMPTY_, \
		       RINGTRACE__IS_EMPTY(RINGTRACE__FIRST(__VA_ARGS__, ~)))(__VA_ARGS__)
#define RINGTRACE__NFIELDS_IF_EMPTY_1(...) 0
#define RINGTRACE__NFIELDS_IF_EMPTY_0(...) RINGTRACE__NARG(__VA_ARGS__)
#define RINGTRACE__NARG(...) RINGTRACE__NARG_(__VA_ARGS__, \
	error_more_than_16_fields, error_more_than_16_fields, error_more_than_16_fields, \
	error_more_than_16_fields, error_more_than_16_fields, error_more_than_16_fields, \
	error_more_than_16_fields, error_more_than_16_fields, \
	16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, ~)
#define RINGTRACE__NARG_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, \
			 a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, \
			 n, ...) n

#define RINGTRACE__IS_EMPTY(x) RINGTRACE__CAT(RINGTRACE__IS_EMPTY_, RINGTRACE__IS_GROUP(x))(x)
#define RINGTRACE__IS_EMPTY_1(x) 0
#define RINGTRACE__IS_EMPTY_0(x) RINGTRACE__IS_GROUP(x ())
#define RINGTRACE__IS_GROUP(x) RINGTRACE__SECOND_(RINGTRACE__IS_GROUP_ x, 0, ~)
#define RINGTRACE__IS_GROUP_(...) ~, 1
#define RINGTRACE__SECOND_(...) RINGTRACE__SECOND(__VA_ARGS__)
#define RINGTRACE__SECOND(a, b, ...) b
#define RINGTRACE__FIRST(a, ...) a

#define RINGTRACE__CAT(a, b) RINGTRACE__CAT_(a, b)
#define RINGTRACE__CAT_(a, b) a##b
#define RINGTRACE__STR(x) RINGTRACE__STR_(x)
#define RINGTRACE__STR_(x) #x

/* ---- language and compiler ------------------------------------------------ */

#ifdef __cplusplus
#  define RINGTRACE__CAST(T, x)     static_cast<T>(x)
#  define RINGTRACE__PTR_BITS(x)    reinterpret_cast<uintptr_t>(x)
#  define RINGTRACE__NULL           nullptr
#else
#  define RINGTRACE__CAST(T, x)     ((T)(x))
#  define RINGTRACE__PTR_BITS(x)    ((uintptr_t)(x))
#  define RINGTRACE__NULL           ((void *)0)
#endif

#define RINGTRACE__UNUSED __attribute__((unused))

/* `retain` keeps the section under --gc-sections whatever the linker does
 * with __start_/__stop_ references. */
#if defined(__has_attribute)
#  if __has_attribute(retain)
#    define RINGTRACE__RETAIN , retain
#  endif
#endif
#ifdef RINGTRACE_INLINE_SUFFIX
#  define RINGTRACE__SUFFIX_INLINE 1
#else
#  define RINGTRACE__SUFFIX_INLINE 0
#endif

#ifndef RINGTRACE__RETAIN
#  define RINGTRACE__RETAIN
#endif

/* Larger than any sub-buffer and small enough that adding record headers to
 * it cannot wrap a uint32_t: a payload this big is dropped as too big. */
#define RINGTRACE__PAYLOAD_MAX 0x7fffffffu

/*
 * Type errors that C only warns about become errors at a call site: an
 * integer for a string or pointer (or the reverse) or an array of the wrong
 * element type would otherwise record garbage, or crash in the probe. C++
 * rejects them already and does not know these options.
 */
#ifdef __cplusplus
#  define RINGTRACE__CHECK_BEGIN
#  define RINGTRACE__CHECK_END
#else
#  define RINGTRACE__CHECK_BEGIN \
	_Pragma("GCC diagnostic push") \
	_Pragma("GCC diagnostic error \"-Wint-conversion\"") \
	_Pragma("GCC diagnostic error \"-Wincompatible-pointer-types\"")
#  define RINGTRACE__CHECK_END _Pragma("GCC diagnostic pop")
#endif

/* ---- the public macros ---------------------------------------------------
 *
 * provider and name are pasted where they are first seen: passed on to
 * another macro they would be macro-expanded first (`linux` is 1 in GNU
 * modes).
 */

#define RINGTRACE_EVENT(provider, name, ...) \
	RINGTRACE__EVENT(ringtrace__desc_##provider##_##name, \
			 ringtrace__ptr_##provider##_##name, \
			 ringtrace__probe_##provider##_##name, \
			 ringtrace__stk_##provider##_##name, \
			 #provider, #name, 0, RINGTRACE__NFIELDS(__VA_ARGS__), __VA_ARGS__)

/* The same, for an event that carries the stack of the code that fires it
 * (fields "stack_id" and "stack", see "Stacks" at the top of this file). */
#define RINGTRACE_EVENT_STACK(provider, name, ...) \
	RINGTRACE__EVENT(ringtrace__desc_##provider##_##name, \
			 ringtrace__ptr_##provider##_##name, \
			 ringtrace__probe_##provider##_##name, \
			 ringtrace__stk_##provider##_##name, \
			 #provider, #name, RINGTRACE__EVF_STACK, RINGTRACE__NFIELDS(__VA_ARGS__), \
			 __VA_ARGS__)

#define RINGTRACE__EVENT(desc, ptr, probe, stk, pstr, nstr, flags, nf, ...) \
	RINGTRACE__EVENT_(desc, ptr, probe, stk, pstr, nstr, flags, \
			  RINGTRACE__CAT(RINGTRACE__FE_, nf), __VA_ARGS__, ~)

/*
 * The descriptor is initialised by position (C++11 has no designators):
 * enabled, id, abi, line, provider, name, signature, file, flags, pad,
 * reserved. The
 * trailing declaration makes the macro take a semicolon, like a declaration.
 */
#define RINGTRACE__EVENT_(desc, ptr, probe, stk, pstr, nstr, flags, fe, ...) \
	enum { stk = (flags) != 0 }; \
	static struct ringtrace_event_desc desc = { \
		0, 0, RINGTRACE_ABI_VERSION, __LINE__, pstr, nstr, \
		fe(RINGTRACE__OP_SIG, RINGTRACE__SEP_SEMI, __VA_ARGS__), \
		__FILE__, flags, 0, RINGTRACE__NULL \
	}; \
	static struct ringtrace_event_desc *const ptr \
		__attribute__((used, section("ringtrace_events") RINGTRACE__RETAIN)) = &desc; \
	static __attribute__((noinline, unused)) void \
	probe(fe(RINGTRACE__OP_PARAM, RINGTRACE__SEP_COMMA, __VA_ARGS__)) \
	{ \
		fe(RINGTRACE__OP_PREP, RINGTRACE__SEP_NONE, __VA_ARGS__) \
		const uint64_t ringtrace__size = \
			UINT64_C(0) fe(RINGTRACE__OP_SIZE, RINGTRACE__SEP_NONE, __VA_ARGS__); \
		struct ringtrace__wctx ringtrace__ctx; \
		char *ringtrace__p RINGTRACE__UNUSED; \
		if (!ringtrace__reserve_in(&ringtrace__ctx, &desc, \
					ringtrace__size > RINGTRACE__PAYLOAD_MAX \
						? RINGTRACE__PAYLOAD_MAX \
						: RINGTRACE__CAST(uint32_t, ringtrace__size), \
					stk || RINGTRACE__SUFFIX_INLINE)) \
			return; \
		ringtrace__p = ringtrace__ctx.payload; \
		fe(RINGTRACE__OP_WRITE, RINGTRACE__SEP_NONE, __VA_ARGS__) \
		ringtrace__commit(&ringtrace__ctx); \
	} \
	struct ringtrace__event_needs_a_semicolon

#define ringtrace_tracepoint(provider, name, ...) \
	do { \
		RINGTRACE__CHECK_BEGIN \
		if (RINGTRACE__UNLIKELY(__atomic_load_n( \
			    &ringtrace__desc_##provider##_##name.enabled, __ATOMIC_RELAXED))) { \
			ringtrace__probe_##provider##_##name(__VA_ARGS__); \
			/* An event with a stack is not a tail call: the \
			 * caller's frame stays on the stack the probe \
			 * captures. (Constant: other call sites keep their \
			 * tail call, and clang its frameless disabled path.) */ \
			if (ringtrace__stk_##provider##_##name) \
				RINGTRACE__BARRIER(); \
		} \
		RINGTRACE__CHECK_END \
	} while (0)

#define ringtrace_tracepoint_enabled(provider, name) \
	RINGTRACE__UNLIKELY(__atomic_load_n(&ringtrace__desc_##provider##_##name.enabled, \
					    __ATOMIC_RELAXED))

#endif /* RINGTRACE_H */
