/*
 * rb_shm.c - creating, mapping and validating the shared-memory region.
 *
 * The recorder creates the region; the traced program maps it at start-up.
 * Both sides go through rb_view_open(), which treats every header field as
 * hostile: a region that does not validate is never used, so a damaged or
 * foreign file cannot make the program write outside its mapping.
 * Runs once per session, never on a hot path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "ringbuf/rb.h"
#include "stackmap/maplog.h"
#include "stackmap/stackmap.h"

#define PAGE 4096u

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t log2u(uint64_t v)
{
	return (uint32_t)__builtin_ctzll(v);
}

uint32_t rb_possible_cpus(void)
{
	/* /sys/devices/system/cpu/possible lists ascending ranges ("0-3,8-11");
	 * rseq hands out ids up to the last number. */
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	uint32_t n = 0;
	if (f) {
		char buf[256];
		if (fgets(buf, sizeof(buf), f)) {
			unsigned long last = 0;
			int seen = 0;
			for (char *s = buf; *s;) {
				if (*s >= '0' && *s <= '9') {
					last = strtoul(s, &s, 10);
					seen = 1;
				} else {
					s++;
				}
			}
			if (seen && last < RB_MAX_CPUS)
				n = (uint32_t)last + 1;
		}
		fclose(f);
	}
	if (n == 0)
		n = (uint32_t)get_nprocs_conf();
	if (n == 0)
		n = 1;
	return n > RB_MAX_CPUS ? RB_MAX_CPUS : n;
}

struct layout {
	uint64_t reg_off, cpu_off, cpu_stride, slots_rel, data_rel, total;
};

static int compute_layout(uint32_t ncpus, uint32_t sb_shift, uint32_t nsb_shift, uint64_t reg_size,
			  struct layout *l)
{
	if (ncpus == 0 || ncpus > RB_MAX_CPUS || sb_shift < RB_SB_MIN_SHIFT ||
	    sb_shift > RB_SB_MAX_SHIFT || nsb_shift < RB_NSB_MIN_SHIFT ||
	    nsb_shift > RB_NSB_MAX_SHIFT || reg_size < PAGE || reg_size > (64u << 20))
		return -EINVAL;
	uint64_t nsb = UINT64_C(1) << nsb_shift;
	uint64_t buf = UINT64_C(1) << (sb_shift + nsb_shift);
	l->reg_off = align_up(sizeof(struct ringtrace__shm_header), PAGE);
	l->cpu_off = align_up(l->reg_off + reg_size, PAGE);
	l->slots_rel = align_up(sizeof(struct ringtrace__rb_cpu), 64);
	l->data_rel = align_up(l->slots_rel + nsb * sizeof(struct ringtrace__rb_slot), PAGE);
	l->cpu_stride = align_up(l->data_rel + buf, PAGE);
	l->total = l->cpu_off + (uint64_t)ncpus * l->cpu_stride;
	return 0;
}

/* The stack area goes last: the object log, then the stack map. */
static uint64_t stack_area_size(uint32_t bits, uint32_t ncpus)
{
	return align_up(maplog_size(), PAGE) + align_up(stackmap_size(bits, ncpus), PAGE);
}

static int params_layout(const struct rb_params *p, struct layout *l, uint64_t *ret_stack)
{
	if (!is_pow2(p->sb_size) || !is_pow2(p->nsb) || p->mode > 1 || p->clock > 1 || p->stacks > 1 ||
	    p->block_us > RB_BLOCK_MAX_US ||
	    (p->stack_bits && (p->stack_bits < STACKMAP_BITS_MIN || p->stack_bits > STACKMAP_BITS_MAX)) ||
	    (p->stacks && !p->stack_bits))
		return -EINVAL;
	int r = compute_layout(p->ncpus, log2u(p->sb_size), log2u(p->nsb), p->reg_size, l);
	if (r < 0)
		return r;
	*ret_stack = p->stack_bits ? stack_area_size(p->stack_bits, p->ncpus) : 0;
	return 0;
}

int rb_region_size(const struct rb_params *p, uint64_t *ret_size)
{
	struct layout l;
	uint64_t stack;
	int r = params_layout(p, &l, &stack);
	if (r < 0)
		return r;
	*ret_size = stack ? align_up(l.total, PAGE) + stack : l.total;
	return 0;
}

int rb_region_init(void *mem, uint64_t size, const struct rb_params *p)
{
	struct layout l;
	uint64_t stack;
	int r = params_layout(p, &l, &stack);
	if (r < 0)
		return r;
	uint64_t stack_off = stack ? align_up(l.total, PAGE) : 0;
	uint64_t total = stack ? stack_off + stack : l.total;
	if (size < total)
		return -EINVAL;
	struct ringtrace__shm_header *h = mem;
	memset(h, 0, sizeof(*h));
	h->magic = RINGTRACE__SHM_MAGIC;
	h->version = RINGTRACE__SHM_VERSION;
	h->header_size = sizeof(*h);
	h->total_size = total;
	h->ncpus = p->ncpus;
	h->sb_shift = log2u(p->sb_size);
	h->nsb_shift = log2u(p->nsb);
	h->mode = p->mode;
	h->clock = p->clock;
	h->creator_pid = (uint32_t)getpid();
	memcpy(h->uuid, p->uuid, sizeof(h->uuid));
	h->reg_off = l.reg_off;
	h->reg_size = p->reg_size;
	h->cpu_off = l.cpu_off;
	h->cpu_stride = l.cpu_stride;
	h->slots_rel = l.slots_rel;
	h->data_rel = l.data_rel;
	memcpy(h->patterns, p->patterns, sizeof(h->patterns));
	for (uint32_t c = 0; c < p->ncpus; c++)
		((struct ringtrace__rb_cpu *)((char *)mem + l.cpu_off + (uint64_t)c * l.cpu_stride))->block_us =
			p->mode == RINGTRACE__MODE_OVERWRITE ? 0 : p->block_us;
	h->patterns[sizeof(h->patterns) - 1] = 0;
	h->patterns[sizeof(h->patterns) - 2] = 0;
	if (stack) {
		h->stacks = p->stacks;
		h->stack_off = stack_off;
		h->stack_size = stack;
		char *area = (char *)mem + stack_off;
		uint64_t seed;
		memcpy(&seed, p->uuid, sizeof(seed));
		size_t log = align_up(maplog_size(), PAGE);
		if ((r = maplog_init(area, log)) < 0 ||
		    (r = stackmap_init(area + log, stack - log, p->stack_bits, p->ncpus, seed)) < 0)
			return r;
	}
	return 0;
}

int rb_stack_area(const struct ringtrace__rb *rb, void **ret_log, size_t *ret_log_size, void **ret_map,
		  size_t *ret_map_size)
{
	const struct ringtrace__shm_header *h = rb->hdr;
	/* What was validated, never the header again (shared, writable). */
	if (!rb->stack_size)
		return -ENOENT;
	/* Validated by rb_view_open(); the header is re-read, not trusted
	 * anew: the offsets were checked against the mapping then. */
	char *area = (char *)h + rb->stack_off;
	size_t log = align_up(maplog_size(), PAGE);
	*ret_log = area;
	*ret_log_size = log;
	*ret_map = area + log;
	*ret_map_size = rb->stack_size - log;
	return 0;
}

int rb_view_open(void *mem, uint64_t size, struct ringtrace__rb **ret_rb)
{
	struct ringtrace__shm_header *h = mem;
	struct layout l;

	if (!mem || size < sizeof(*h))
		return -EBADMSG;
	if (h->magic != RINGTRACE__SHM_MAGIC)
		return -EBADMSG;
	if (h->version != RINGTRACE__SHM_VERSION || h->header_size != sizeof(*h))
		return -EPROTO;
	/* Recompute the layout from the few free parameters and require the
	 * stored offsets to match it exactly: nothing else is trusted. */
	if (compute_layout(h->ncpus, h->sb_shift, h->nsb_shift, h->reg_size, &l) < 0)
		return -EBADMSG;
	if (size < l.total || h->reg_off != l.reg_off ||
	    h->cpu_off != l.cpu_off || h->cpu_stride != l.cpu_stride ||
	    h->slots_rel != l.slots_rel || h->data_rel != l.data_rel || h->mode > 1 || h->clock > 1)
		return -EBADMSG;
	/* The stack area, if any, follows the CPU areas to the end. */
	uint64_t stack_off = h->stack_off, stack_size = h->stack_size;
	if (stack_size ? (stack_off != align_up(l.total, PAGE) || stack_size > (UINT64_C(1) << 34) ||
			  stack_size < align_up(maplog_size(), PAGE) + PAGE ||
			  h->total_size != stack_off + stack_size || size < h->total_size || h->stacks > 1)
		       : (stack_off || h->stacks || h->total_size != l.total))
		return -EBADMSG;

	struct ringtrace__rb *rb = calloc(1, sizeof(*rb) + h->ncpus * sizeof(rb->cpu[0]));
	if (!rb)
		return -ENOMEM;
	rb->hdr = h;
	rb->ncpus = h->ncpus;
	rb->sb_shift = h->sb_shift;
	rb->nsb_shift = h->nsb_shift;
	rb->mode = h->mode;
	rb->sb_mask = (UINT64_C(1) << h->sb_shift) - 1;
	rb->buf_mask = (UINT64_C(1) << (h->sb_shift + h->nsb_shift)) - 1;
	rb->clock_tsc = h->clock == RINGTRACE__CLOCK_TSC;
	rb->reg_off = l.reg_off;
	rb->reg_size = h->reg_size;
	rb->stack_off = stack_off;
	rb->stack_size = stack_size;
	rb->stacks = h->stacks;
	for (uint32_t c = 0; c < h->ncpus; c++) {
		char *base = (char *)mem + l.cpu_off + (uint64_t)c * l.cpu_stride;
		rb->cpu[c].ctl = (struct ringtrace__rb_cpu *)base;
		rb->cpu[c].slots = (struct ringtrace__rb_slot *)(base + l.slots_rel);
		rb->cpu[c].data = base + l.data_rel;
	}
	/* The wait for room, as CPU 0's area says (the creator writes it in
	 * every one; the header has no room for it without a new layout).
	 * Read once, bounded: a larger value waits the longest we allow. */
	uint32_t block_us = rb->cpu[0].ctl->block_us;
	rb->block_us = block_us > RB_BLOCK_MAX_US ? RB_BLOCK_MAX_US : block_us;
	*ret_rb = rb;
	return 0;
}

void rb_view_free(struct ringtrace__rb *rb)
{
	free(rb);
}

const char *rb_shm_dir(void)
{
	const char *d = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	if (d && *d == '/' && stat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
	    access(d, W_OK) == 0)
		return d;
	return "/dev/shm";
}

int rb_shm_create(const char *dir, const struct rb_params *p, char **ret_path, int *ret_fd,
		  void **ret_mem, uint64_t *ret_size)
{
	uint64_t size;
	int r = rb_region_size(p, &size);
	if (r < 0)
		return r;
	char *path = NULL;
	int fd = -1;
	for (int tries = 0; tries < 16 && fd < 0; tries++) {
		free(path);
		path = NULL;
		unsigned rnd = (unsigned)(p->uuid[0] | p->uuid[1] << 8 | p->uuid[2] << 16) ^ (unsigned)tries * 2654435761u;
		if (asprintf(&path, "%s/ringtrace-%d-%08x", dir, (int)getpid(), rnd) < 0)
			return -ENOMEM;
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno != EEXIST) {
			r = -errno;
			free(path);
			return r;
		}
	}
	if (fd < 0) {
		free(path);
		return -EEXIST;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		r = -errno;
		goto fail;
	}
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	r = rb_region_init(mem, size, p);
	if (r < 0) {
		munmap(mem, size);
		goto fail;
	}
	if (ret_fd)
		*ret_fd = fd;
	else
		close(fd);
	*ret_path = path;
	*ret_mem = mem;
	*ret_size = size;
	return 0;
fail:
	close(fd);
	unlink(path);
	free(path);
	return r;
}

int rb_shm_map_fd(int fd, void **ret_mem, uint64_t *ret_size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    st.st_size < (off_t)sizeof(struct ringtrace__shm_header))
		return -EPERM;
	void *mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED)
		return -errno;
	*ret_mem = mem;
	*ret_size = (uint64_t)st.st_size;
	return 0;
}

int rb_shm_map(const char *path, void **ret_mem, uint64_t *ret_size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	int r = rb_shm_map_fd(fd, ret_mem, ret_size);
	close(fd);
	return r;
}
