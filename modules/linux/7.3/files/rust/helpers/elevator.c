// SPDX-License-Identifier: GPL-2.0

/*
 * Helpers for the Rust elevator (I/O scheduler) abstraction,
 * rust/kernel/block/mq/elevator.rs and elevator/: inline functions of the
 * block layer that Rust cannot call directly.
 */

#include <linux/blk-mq.h>
#include <linux/blk_types.h>
#include <linux/blkdev.h>
#include <linux/iocontext.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <trace/events/block.h>
#include "../../block/blk.h"
#include "../../block/blk-mq-sched.h"

__rust_helper bool rust_helper_blk_discard_mergable(struct request *req)
{
	return blk_discard_mergable(req);
}

__rust_helper void rust_helper_blk_mq_set_min_shallow_depth(struct request_queue *q,
							    unsigned int depth)
{
	blk_mq_set_min_shallow_depth(q, depth);
}

__rust_helper void rust_helper_trace_block_rq_insert(struct request *rq)
{
	trace_block_rq_insert(rq);
}

/*
 * blk_mq_run_hw_queue() takes queue_lock only when it finds nothing to run.
 * The abstraction tells lockdep on every call, so that a caller holding a
 * lock taken under queue_lock is reported at once, not on the rare call
 * that takes it. blk_mq_run_hw_queue() takes it with interrupts off
 * (spin_lock_irqsave), and runs from hard interrupts too (an elevator's
 * hrtimer), so lockdep is told of an acquisition with interrupts off, as
 * the kernel makes it: one with them on, from a caller in process context,
 * is an {IN-HARDIRQ-W} -> {HARDIRQ-ON-W} use the kernel never makes.
 */
__rust_helper void rust_helper_might_lock(spinlock_t *lock)
{
	unsigned long flags;

	local_irq_save(flags);
	might_lock(lock);
	local_irq_restore(flags);
}

__rust_helper u64 rust_helper_ktime_get_ns(void)
{
	return ktime_get_ns();
}

__rust_helper u64 rust_helper_blk_time_get_ns(void)
{
	return blk_time_get_ns();
}

__rust_helper u64 rust_helper_get_jiffies_64(void)
{
	return get_jiffies_64();
}

__rust_helper void rust_helper_list_add(struct list_head *new, struct list_head *head)
{
	list_add(new, head);
}

__rust_helper void rust_helper_list_del_init(struct list_head *entry)
{
	list_del_init(entry);
}

/* Per-process I/O contexts (rust/kernel/block/mq/elevator/icq.rs). */
__rust_helper struct io_cq *rust_helper_ioc_find_get_icq(struct request_queue *q)
{
#ifdef CONFIG_BLK_ICQ
	return ioc_find_get_icq(q);
#else
	return NULL;
#endif
}

__rust_helper void rust_helper_put_io_context(struct io_context *ioc)
{
	put_io_context(ioc);
}

/*
 * The current task's io_cq on @q, if it has one, as BFQ's bfq_bic_lookup():
 * ioc_lookup_icq() is private to the block layer and wants queue_lock.
 */
__rust_helper struct io_cq *rust_helper_ioc_lookup_current_icq(struct request_queue *q)
{
#ifdef CONFIG_BLK_ICQ
	struct io_cq *icq;
	unsigned long flags;

	if (!current->io_context)
		return NULL;

	spin_lock_irqsave(&q->queue_lock, flags);
	icq = ioc_lookup_icq(q);
	spin_unlock_irqrestore(&q->queue_lock, flags);
	return icq;
#else
	return NULL;
#endif
}
