// SPDX-License-Identifier: GPL-2.0
/*
 * insn_count: a QEMU TCG plugin that counts the guest kernel's
 * instructions, block by block, for `cargo xtask qemu-bench --count-insns`.
 *
 * Every translated block at a kernel address (upper half) gets a counter
 * that the generated code increments inline each time the block runs;
 * a block's instructions times its count is what it executed. Unlike
 * cpu-clock sampling under TCG, this sees code that runs with interrupts
 * off, and the counts do not depend on how busy the host is.
 *
 * The guest cuts the counts into phases: it writes a file name (relative
 * to dir=) or "discard" into <dir>/insn.trigger; the plugin writes the
 * counts since the last phase to that file (unless discarded), zeroes
 * them, and removes the trigger, which tells the guest it is done. One
 * line per block that ran: "<address hex> <instructions> <executions>".
 *
 * The counters are plain (not atomic) increments, as QEMU's own inline
 * counters are: two vCPUs running one block at the same instant can lose
 * an increment. That is rare next to the counts this measures.
 *
 * Built against QEMU's plugin API version 1 (QEMU 7.2 and later); the
 * few declarations it needs are written out here so that no QEMU headers
 * are needed to build it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
} qemu_info_t;

enum { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *));
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
		int op, void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* The kernel's half of the x86-64 address space. */
#define KERNEL_START 0xffff800000000000ull

struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t count;
};

/* Open addressing, never shrinks; a 6.12 guest translates ~10^5 blocks. */
#define CAPACITY (1u << 20)
static struct block *blocks;
static uint64_t dropped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char dir[4096] = ".";

static struct block *block_for(uint64_t vaddr, uint64_t insns)
{
	uint64_t h = (vaddr * 0x9E3779B97F4A7C15ull) ^ insns;

	for (uint32_t i = 0; i < CAPACITY; i++) {
		struct block *b = &blocks[(h + i) & (CAPACITY - 1)];

		if (b->vaddr == vaddr && b->insns == insns)
			return b;
		if (!b->vaddr) {
			b->vaddr = vaddr;
			b->insns = insns;
			return b;
		}
	}
	return NULL;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	if (vaddr < KERNEL_START)
		return;
	/* A block translated again (after a flush) finds its counter. */
	pthread_mutex_lock(&lock);
	b = block_for(vaddr, qemu_plugin_tb_n_insns(tb));
	if (!b)
		dropped++;
	pthread_mutex_unlock(&lock);
	if (b)
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &b->count, 1);
}

static void write_counts(const char *name)
{
	char path[8192], tmp[8300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		qemu_plugin_outs("insn_count: cannot write counts\n");
		return;
	}
	fprintf(f, "# insn_count v1 dropped_blocks %llu\n", (unsigned long long)dropped);
	for (uint32_t i = 0; i < CAPACITY; i++) {
		struct block *b = &blocks[i];

		if (b->vaddr && b->count)
			fprintf(f, "%llx %llu %llu\n", (unsigned long long)b->vaddr,
				(unsigned long long)b->insns, (unsigned long long)b->count);
	}
	fclose(f);
	rename(tmp, path);
}

static void *watch_trigger(void *arg)
{
	char trigger[4200], name[4096];

	snprintf(trigger, sizeof(trigger), "%s/insn.trigger", dir);
	for (;;) {
		FILE *f;
		size_t n;

		usleep(20000);
		f = fopen(trigger, "r");
		if (!f)
			continue;
		n = fread(name, 1, sizeof(name) - 1, f);
		fclose(f);
		name[n] = 0;
		name[strcspn(name, "\n")] = 0;
		/* Only names inside dir: no absolute paths, no "..". */
		if (name[0] && strcmp(name, "discard") && name[0] != '/' && !strstr(name, ".."))
			write_counts(name);
		for (uint32_t i = 0; i < CAPACITY; i++)
			blocks[i].count = 0;
		unlink(trigger);
	}
	return NULL;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	pthread_t t;

	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "dir=", 4))
			snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
	blocks = calloc(CAPACITY, sizeof(*blocks));
	if (!blocks)
		return 1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	if (pthread_create(&t, NULL, watch_trigger, NULL))
		return 1;
	pthread_detach(t);
	return 0;
}
