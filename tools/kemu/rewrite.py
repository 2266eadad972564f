#!/usr/bin/env python3
"""rewrite.py IN.cu OUT.cpp -- kemu's launch rewrite (see tools/kemu/kemu.h).

Turns every `KERNEL<<<grid, block[, shmem[, stream]]>>>(args)` into
`kemu::launch(KERNEL, "KERNEL", "file:line", SYNC, grid, block[, shmem[, stream]])(args)`, where
KERNEL is an identifier (with `::` and a balanced template argument list) or a parenthesised
expression; macro bodies are rewritten the same way. Lines are kept, and a #line directive
points diagnostics at the original file.

SYNC is 1 when the kernel's body, or a function of the same file or of a kernels/*.cuh header
it includes that it calls (transitively),
names a block or warp synchronisation (__syncthreads, shuffles, votes, cub::BlockScan): its
threads then run as fibers or pthreads that can wait for each other. Kernels without (most elementwise ones) run their
threads one after another, which is much faster; kemu fails loudly if such a kernel calls a
synchronisation after all (KEMU_THREADS=1 runs every kernel's threads as the synchronising ones).
"""
import os
import re
import sys

SYNC_WORDS = re.compile(r'__syncthreads|__syncwarp|__shfl\w*|__ballot_sync|__any_sync|__all_sync|BlockScan')
DEF = re.compile(r'\b([A-Za-z_]\w*)\s*\(')


def bodies(src):
    """{function name: body text} for every function defined in src (a crude scan: a name,
    a parenthesised list, optional qualifiers, then a brace block)."""
    out = {}
    for m in DEF.finditer(src):
        name, i, depth = m.group(1), m.end() - 1, 0
        while i < len(src):                      # the parameter list
            if src[i] == '(':
                depth += 1
            elif src[i] == ')':
                depth -= 1
                if depth == 0:
                    break
            i += 1
        j = i + 1
        while j < len(src) and (src[j].isspace() or src[j:j + 5] == 'const'):
            j += 5 if src[j:j + 5] == 'const' else 1
        if j >= len(src) or src[j] != '{' or name in ('if', 'for', 'while', 'switch', 'return'):
            continue
        depth, k = 0, j
        while k < len(src):
            if src[k] == '{':
                depth += 1
            elif src[k] == '}':
                depth -= 1
                if depth == 0:
                    break
            k += 1
        out[name] = out.get(name, '') + src[j:k + 1]
    return out


def syncing(src):
    """Names of the functions of src that synchronise, directly or through each other."""
    b = bodies(src)
    sync = {n for n, t in b.items() if SYNC_WORDS.search(t)}
    changed = True
    while changed:
        changed = False
        for n, t in b.items():
            if n not in sync and any(re.search(r'\b%s\b' % re.escape(s), t) for s in sync):
                sync.add(n)
                changed = True
    return sync


def kernel_start(src, end):
    """Index where the kernel expression that ends just before `end` begins."""
    i = end
    while i > 0 and src[i - 1] in ' \t':
        i -= 1
    if src[i - 1] == ')':
        depth = 0
        while True:
            i -= 1
            if src[i] == ')':
                depth += 1
            elif src[i] == '(':
                depth -= 1
                if depth == 0:
                    return i
    if src[i - 1] == '>':
        depth = 0
        while True:
            i -= 1
            if src[i] == '>':
                depth += 1
            elif src[i] == '<':
                depth -= 1
                if depth == 0:
                    break
    while i > 0 and (src[i - 1].isalnum() or src[i - 1] in '_:'):
        i -= 1
    return i


def main():
    path, out = sys.argv[1], sys.argv[2]
    src = open(path).read()
    headers = [os.path.join(os.path.dirname(path), h) for h in re.findall(r'#include "(\w+\.cuh)"', src)]
    sync = syncing('\n'.join([open(h).read() for h in headers if os.path.exists(h)] + [src]))
    res, pos = [], 0
    while True:
        k = src.find('<<<', pos)
        if k < 0:
            break
        s = kernel_start(src, k)
        e = src.find('>>>', k)
        if s < pos or e < 0:
            sys.exit('%s: cannot parse the launch at offset %d' % (path, k))
        name = ' '.join(src[s:k].split()).replace('\\', '').replace('"', '\\"')
        line = src.count('\n', 0, k) + 1
        cfg = src[k + 3:e]
        res.append(src[pos:s])
        base = re.match(r'\(?\s*([\w:]+)', src[s:k]).group(1).split('::')[-1]
        res.append('kemu::launch(%s, "%s", "%s:%d", %d, %s)' % (src[s:k].rstrip(), name, path, line,
                                                              base in sync or (base == 'kernel' and bool(sync)), cfg))
        pos = e + 3
    res.append(src[pos:])
    with open(out, 'w') as f:
        f.write('#line 1 "%s"\n' % path)
        f.write(''.join(res))


if __name__ == '__main__':
    main()
