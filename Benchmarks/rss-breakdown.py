#!/usr/bin/env python3
"""Where a process's resident memory goes: Benchmarks/rss-breakdown.py PID [TOP]

Prints markdown:
  1. /proc/PID/smaps_rollup (RSS, PSS, anonymous, file-backed clean/dirty);
  2. the largest mappings by RSS, grouped by file (the heap and thread stacks are [anon]/[heap]/[stack]);
  3. for the main executable (with the Swift runtime, Foundation and the Swift packages linked in
     statically, one file), which library each resident page belongs to: every present page of the
     executable's mappings (/proc/PID/pagemap) is mapped back to the ELF section and the symbol that
     contains it (`nm -n`), and the symbol to its library (Swift module from the mangled name, the
     Swift runtime, libdispatch, ICU data, ...). Pages with no symbol count under their section.
Reading another process's pagemap needs the same user (or root). Standard library only.
"""
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def kb(n):
    return f"{n / 1024:.1f}"


def mappings(pid):
    out, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ \d+\s*(.*)$", line)
            if m:
                cur = {"start": int(m[1], 16), "end": int(m[2], 16), "perms": m[3], "offset": int(m[4], 16),
                       "path": m[5].strip() or "[anon]", "Rss": 0, "Private_Dirty": 0}
                out.append(cur)
            elif cur is not None:
                k, _, v = line.partition(":")
                if k in ("Rss", "Private_Dirty"):
                    cur[k] = int(v.split()[0])
    return out


def rollup(pid):
    vals = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                vals[k] = int(v.split()[0])
    return vals


def present_pages(pid, start, end):
    pages = []
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(start // PAGE * 8)
        data = f.read((end - start) // PAGE * 8)
    for i in range(len(data) // 8):
        (entry,) = struct.unpack_from("<Q", data, i * 8)
        if entry >> 63 & 1:
            pages.append(start + i * PAGE)
    return pages


def elf_layout(path):
    """LOAD segments (vaddr, offset, filesz) and sections (name, addr, size) from readelf."""
    segs, secs = [], []
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD":
            segs.append((int(p[2], 16), int(p[1], 16), int(p[4], 16)))
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m[2], 16):
            secs.append((m[1], int(m[2], 16), int(m[3], 16)))
    return segs, secs


def library_of(name):
    if name.startswith("$s") or name.startswith("_$s"):
        m = re.match(r"_?\$s(\d+)", name)
        if m:
            n = int(m[1])
            mod = name[m.end():m.end() + n]
            if mod == "s":
                return "Swift stdlib"
            return {"So": "C types (Swift metadata)", "Sc": "Swift concurrency"}.get(mod, mod)
        if name.startswith("$sS") or name.startswith("$ss"):
            return "Swift stdlib"
        return "Swift stdlib"
    if "icudt" in name or name.startswith("icu") or re.search(r"_swift\d*$", name) or name.startswith("u_") or name.startswith("ucal") or name.startswith("udat") or "icu_" in name:
        return "ICU (FoundationInternationalization)"
    if name.startswith("_ZN5swift") or name.startswith("swift_") or name.startswith("_swift_") or name.startswith("_ZL") and "swift" in name.lower():
        return "Swift runtime"
    if "dispatch" in name:
        return "libdispatch"
    if name.startswith("CF") or name.startswith("__CF") or name.startswith("_CF"):
        return "CoreFoundation"
    if name.startswith("sqlite3"):
        return "SQLite"
    if name.startswith("_Z"):
        return "C++ (runtime, ICU)"
    if name.startswith("dosetap_"):
        return "DoseTap C shims"
    return "other C"


def main():
    pid = int(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    exe = os.readlink(f"/proc/{pid}/exe")
    r = rollup(pid)
    print(f"RSS breakdown of PID {pid} ({exe}):")
    print()
    print("| smaps_rollup | MB |")
    print("|---|---|")
    for k in ("Rss", "Pss", "Anonymous", "Private_Clean", "Private_Dirty", "Shared_Clean"):
        if k in r:
            print(f"| {k} | {kb(r[k])} |")
    maps = mappings(pid)
    by_file = collections.Counter()
    for m in maps:
        by_file[(os.path.basename(m["path"]) if m["path"].startswith("/") else m["path"])] += m["Rss"]
    print()
    print("| largest mappings (by file) | RSS MB |")
    print("|---|---|")
    for name, rss in by_file.most_common(top):
        print(f"| {name} | {kb(rss)} |")

    # The executable's resident pages, by library and by section.
    segs, secs = elf_layout(exe)
    syms = []
    out = subprocess.run(["nm", "-n", "--defined-only", exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split(" ", 2)
        if len(p) == 3 and p[1] in "tTrRdDbBvVwWuV":
            syms.append((int(p[0], 16), p[2]))
    addrs = [a for a, _ in syms]
    import bisect
    libs, sections, perms = collections.Counter(), collections.Counter(), collections.Counter()
    for m in maps:
        if m["path"] != exe:
            continue
        perms[m["perms"]] += m["Rss"]
        perms[m["perms"] + " dirty"] += m["Private_Dirty"]
        # file offset -> link-time address through the LOAD segment holding it
        for page in present_pages(pid, m["start"], m["end"]):
            off = page - m["start"] + m["offset"]
            vaddr = None
            for sv, so, sz in segs:
                if so <= off < so + max(sz, PAGE):
                    vaddr = sv + (off - so)
                    break
            if vaddr is None:
                libs["(outside LOAD segments)"] += PAGE // 1024
                continue
            mid = vaddr + PAGE // 2
            sec = next((n for n, a, s in secs if a <= mid < a + s), "(no section)")
            sections[sec] += PAGE // 1024
            i = bisect.bisect_right(addrs, mid) - 1
            lib = library_of(syms[i][1]) if i >= 0 and sec in (".text", ".rodata", ".data.rel.ro", ".data") else sec
            libs[lib] += PAGE // 1024
    total = sum(libs.values())
    print()
    print(f"Resident pages of the executable ({kb(total)} MB), by library (the symbol holding each page):")
    print()
    print("| library | RSS MB |")
    print("|---|---|")
    for name, n in libs.most_common(top + 8):
        print(f"| {name} | {kb(n)} |")
    print()
    print("| mappings of the executable | RSS MB |")
    print("|---|---|")
    for name, n in sorted(perms.items()):
        print(f"| {name} | {kb(n)} |")
    print()
    print("| section of the executable (approximate: page midpoint) | RSS MB |")
    print("|---|---|")
    for name, n in sections.most_common(top):
        print(f"| {name} | {kb(n)} |")


if __name__ == "__main__":
    main()
