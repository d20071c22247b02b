#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns one traced cold start-up into a file-level start-up trace
(configs/startup/traces/README.md). record.sh runs it; see there for how
the inputs are made.

Inputs: the strace log (strace -f -ttt -T -y, realtime timestamps), the
perf script of major faults with mmap events (perf record -k
CLOCK_REALTIME -e major-faults -d), the application's root (the mounted
image it ran chrooted in), and the header's values.

What it keeps, per task (strace's tid): execve, opens, reads (offsets from
each descriptor's position), stats, directory reads, clones (fork or
thread), waits, and the task's major faults (file and page offset, from
the mapping that covered the address). Everything before the root's
execve that follows its chroot() (the chroot program itself) is dropped.
Think time: the gap between a task's ops in the cold traced run, times
warm_s / warm_traced_s (the tracers' slowdown, measured warm, where no
I/O waits); a gap that ends in a major fault also holds that fault's wait
(perf reports a fault when it is done), which this does not remove.
"""

import argparse
import os
import re
import stat as st

LINE = re.compile(r'^(\d+)\s+(\d+\.\d+)\s+(.*)$')
CALL = re.compile(r'^(\w+)\((.*)\)\s+=\s+(-?\d+|\?|0x[0-9a-f]+)(<[^>]*>)?(.*?)(?:<(\d+\.\d+)>)?$')
FDPATH = re.compile(r'^(-?\d+|AT_FDCWD)<(.*)>$')
SKIP = ('/proc', '/dev', '/sys', '/run', '/tmp')


def split_args(s):
    """Top-level comma-separated arguments of a strace call."""
    out, depth, cur, q = [], 0, [], False
    i = 0
    while i < len(s):
        c = s[i]
        if q:
            cur.append(c)
            if c == '\\':
                cur.append(s[i + 1])
                i += 1
            elif c == '"':
                q = False
        elif c == '"':
            q = True
            cur.append(c)
        elif c in '[{(':
            depth += 1
            cur.append(c)
        elif c in ']})':
            depth -= 1
            cur.append(c)
        elif c == ',' and depth == 0:
            out.append(''.join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if cur:
        out.append(''.join(cur).strip())
    return out


def unquote(a):
    a = a.rstrip('.')
    if a.startswith('"') and a.endswith('"'):
        return bytes(a[1:-1], 'utf-8').decode('unicode_escape')
    return None


class Conv:
    def __init__(self, root):
        self.root = root.rstrip('/')
        self.files = {}      # rel path -> fid
        self.table = []      # (kind, size, rel)
        self.tasks = {}      # tid -> list of (t0, t1, op, args)
        self.proc = {}       # tid -> pid
        self.comm = {}       # tid -> name
        self.created = {}    # tid -> creation time
        self.pos = {}        # (pid, fd) -> position
        self.dirread = set()  # (pid, fd) already read as a folder

    def rel(self, path):
        """The path inside the app root, resolved, or None."""
        if path is None:
            return None
        if path.startswith(self.root + '/'):
            path = path[len(self.root):]
        if not path.startswith('/') or path.startswith(SKIP):
            return None
        full = os.path.realpath(self.root + path)
        if not (full == self.root or full.startswith(self.root + '/')):
            return None
        r = full[len(self.root):] or '/'
        return None if r.startswith(SKIP) else r

    def fid(self, rel):
        if rel in self.files:
            return self.files[rel]
        try:
            s = os.stat(self.root + rel)
            kind, size = ('d', 0) if st.S_ISDIR(s.st_mode) else ('f', s.st_size)
            if not (st.S_ISDIR(s.st_mode) or st.S_ISREG(s.st_mode)):
                return None
        except OSError:
            kind, size = 'n', 0
        self.files[rel] = len(self.table)
        self.table.append((kind, size, rel))
        return self.files[rel]

    def op(self, tid, t0, dur, op, *args):
        self.tasks.setdefault(tid, []).append((t0, t0 + dur, op, args))

    def at(self, dfd, name):
        """A path argument against its directory descriptor (strace -y)."""
        if name is None:
            return None
        if name.startswith('/'):
            return name
        m = FDPATH.match(dfd or '')
        return (m.group(2) + '/' + name) if m else None

    def strace(self, path):
        """Reads the strace log into per-task ops."""
        pending = {}
        started = None  # time of the root's execve after chroot()
        chrooted = False
        for raw in open(path, errors='replace'):
            m = LINE.match(raw.rstrip('\n'))
            if not m:
                continue
            tid, t, rest = int(m.group(1)), float(m.group(2)), m.group(3)
            if rest.endswith('<unfinished ...>'):
                pending[tid] = (t, rest[:-len('<unfinished ...>')].rstrip())
                continue
            r = re.match(r'^<\.\.\. \w+ resumed>(.*)$', rest)
            if r:
                if tid not in pending:
                    continue
                t, head = pending.pop(tid)
                rest = head + r.group(1)
            c = CALL.match(rest)
            if not c:
                continue
            name, args, ret = c.group(1), split_args(c.group(2)), c.group(3)
            retpath = c.group(4)[1:-1] if c.group(4) else None
            dur = float(c.group(6) or 0)
            if name == 'chroot' and ret == '0':
                chrooted = True
                self.root_tid = tid
                continue
            if started is None:
                if chrooted and name == 'execve' and ret == '0':
                    started = t
                    self.proc[tid] = tid
                    self.created[tid] = t
                else:
                    continue
            self.call(tid, t, dur, name, args, ret, retpath)
        self.t_start = started
        return started

    def call(self, tid, t, dur, name, args, ret, retpath):
        pid = self.proc.setdefault(tid, tid)
        ok = not ret.startswith('-') and ret != '?'  # ?: the task was killed in the call
        if name in ('clone', 'clone3', 'fork', 'vfork'):
            if not ok or ret == '?':
                return
            child = int(ret)
            thread = 'CLONE_THREAD' in ' '.join(args)
            self.proc[child] = pid if thread else child
            self.created[child] = t + dur
            self.comm[child] = self.comm.get(tid, '')
            self.op(tid, t, dur, 'thread' if thread else 'fork', child)
        elif name in ('wait4', 'waitid') and ok and ret not in ('0', '?'):
            self.op(tid, t, dur, 'wait', int(ret))
        elif name == 'execve':
            rel = self.rel(self.at(None, unquote(args[0])))
            f = self.fid(rel) if rel else None
            if f is not None:
                self.op(tid, t, dur, 'exec' if ok else 'stat', f)
            if ok and rel:
                self.comm[tid] = os.path.basename(rel)
        elif name in ('openat', 'open'):
            fname = unquote(args[1] if name == 'openat' else args[0])
            path = retpath if ok and retpath else self.at(args[0] if name == 'openat' else None, fname)
            rel = self.rel(path)
            f = self.fid(rel) if rel else None
            if f is None:
                return
            if ok:
                self.pos[(pid, int(ret))] = 0
                self.dirread.discard((pid, int(ret)))
            if self.table[f][0] != 'd':
                self.op(tid, t, dur, 'open', f)
        elif name in ('read', 'pread64') and ok:
            m = FDPATH.match(args[0])
            rel = self.rel(m.group(2)) if m else None
            f = self.fid(rel) if rel else None
            n = int(ret)
            if f is None or self.table[f][0] != 'f':
                return
            key = (pid, int(m.group(1)))
            if name == 'pread64':
                off = int(args[3])
            else:
                off = self.pos.get(key, 0)
                self.pos[key] = off + n
            if n > 0:
                self.op(tid, t, dur, 'read', f, off, n)
        elif name == 'lseek' and ok:
            m = FDPATH.match(args[0])
            if m:
                self.pos[(pid, int(m.group(1)))] = int(ret)
        elif name == 'getdents64':
            m = FDPATH.match(args[0])
            rel = self.rel(m.group(2)) if m else None
            f = self.fid(rel) if rel else None
            key = (pid, int(m.group(1))) if m else None
            if f is not None and key not in self.dirread:
                self.dirread.add(key)
                self.op(tid, t, dur, 'readdir', f)
        elif name in ('newfstatat', 'statx', 'stat', 'lstat', 'access', 'faccessat',
                      'faccessat2', 'readlink', 'readlinkat'):
            at = name in ('newfstatat', 'statx', 'faccessat', 'faccessat2', 'readlinkat')
            fname = unquote(args[1] if at else args[0])
            if not fname:
                return  # fstat of a descriptor: no lookup
            rel = self.rel(self.at(args[0] if at else None, fname))
            f = self.fid(rel) if rel else None
            if f is not None:
                self.op(tid, t, dur, 'stat', f)

    def faults(self, path):
        """Adds each task's major faults, mapped to file offsets."""
        maps = {}  # pid -> list of (start, end, pgoff, path)
        mm = re.compile(r'^\s*(\S.*?)\s+(-?\d+)/(\d+)\s+(\d+\.\d+):\s+PERF_RECORD_MMAP2?\s+(\d+)/(\d+):\s+'
                        r'\[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|0)[^\]]*\]:\s+\S+\s+(.*)$')
        smp = re.compile(r'^\s*(\S.*?)\s+(-?\d+)/(\d+)\s+(\d+\.\d+):\s+([0-9a-f]+)\s')
        n = 0
        for line in open(path, errors='replace'):
            m = mm.match(line)
            if m:
                pid = int(m.group(5))
                start, ln = int(m.group(7), 16), int(m.group(8), 16)
                maps.setdefault(pid, []).append((start, start + ln, int(m.group(9), 16), m.group(10).strip()))
                continue
            m = smp.match(line)
            if not m:
                continue
            pid, tid, t, addr = int(m.group(2)), int(m.group(3)), float(m.group(4)), int(m.group(5), 16)
            if tid not in self.proc or self.t_start is None or t < self.t_start:
                continue
            for (a, b, pgoff, p) in reversed(maps.get(pid, [])):
                if a <= addr < b:
                    rel = self.rel(p) if p.startswith('/') else None
                    f = self.fid(rel) if rel else None
                    if f is not None and self.table[f][0] == 'f':
                        off = (addr - a + pgoff) & ~4095
                        self.op(tid, t, 0.0, 'fault', f, off)
                        n += 1
                    break
        return n

    def write(self, out, header, scale):
        """The trace: header, file table, task names, ops in time order."""
        rows = []
        for tid, ops in self.tasks.items():
            ops.sort(key=lambda o: o[0])
            prev = self.created.get(tid, ops[0][0])
            for (t0, t1, op, args) in ops:
                think = max(0.0, t0 - prev) * scale
                rows.append((t0, think, self.proc[tid], tid, op, args))
                prev = max(prev, t1)
        rows.sort(key=lambda r: r[0])
        t_first = rows[0][0]
        with open(out, 'w') as o:
            o.write('# ironlift-startup-trace 1\n')
            for k, v in header:
                o.write(f'# {k}: {v}\n')
            for i, (kind, size, rel) in enumerate(self.table):
                o.write(f'F\t{i}\t{kind}\t{size}\t{rel}\n')
            for tid in self.tasks:
                o.write(f'T\t{self.proc[tid]}\t{tid}\t{self.comm.get(tid, "")}\n')
            for (t0, think, pid, tid, op, args) in rows:
                a = ''.join(f'\t{x}' for x in args)
                o.write(f'{(t0 - t_first) * 1e6:.0f}\t{think * 1e6:.0f}\t{pid}\t{tid}\t{op}{a}\n')
        return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--strace', required=True)
    ap.add_argument('--faults', required=True)
    ap.add_argument('--root', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--scale', type=float, default=1.0, help='warm_s / warm_traced_s')
    ap.add_argument('--header', action='append', default=[], help='key=value')
    a = ap.parse_args()
    c = Conv(a.root)
    if c.strace(a.strace) is None:
        raise SystemExit('convert.py: no execve after chroot() in the strace log')
    nf = c.faults(a.faults)
    header = [tuple(kv.split('=', 1)) for kv in a.header]
    header.append(('scale', f'{a.scale:.3f} (think times: cold traced gaps x warm_s / warm_traced_s)'))
    n = c.write(a.out, header, a.scale)
    print(f'{a.out}: {n} ops ({nf} major faults), {len(c.table)} files, {len(c.tasks)} tasks')


if __name__ == '__main__':
    main()
