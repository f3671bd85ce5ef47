#!/usr/bin/env python3
"""Makes generate-manual's pages readable by whatis/apropos (lexgrog) and lintian.

swift-argument-parser names a subcommand's page `dosetap.dose.take.1` but writes its NAME section as
`.Nm "dosetap dose take"` and `.Nd "…"`, which lexgrog cannot parse (lintian: bad-whatis-entry). This
puts the page's own name in NAME (`.Nm dosetap.dose.take`, `.Nd` unquoted) and spells the command out
wherever a bare `.Nm` stands for it (SYNOPSIS, AUTHORS), so the pages read as before; and EXIT STATUS
says DoseTap's convention instead of mdoc's generic ">0 if an error occurs".
Usage: scripts/man-names.py DIRECTORY
"""
import pathlib
import re
import sys

for page in sorted(pathlib.Path(sys.argv[1]).glob("*.1")):
    lines = page.read_text(encoding="utf-8").split("\n")
    name = page.name[:-2]
    command = None
    out = []
    in_name = False
    for line in lines:
        if line.startswith(".Sh "):
            in_name = line == ".Sh NAME"
        if in_name and line.startswith(".Nm "):
            command = line[4:].strip().strip('"')
            out.append(f".Nm {name}")
            continue
        if in_name and line.startswith(".Nd "):
            out.append(".Nd " + line[4:].strip().strip('"'))
            continue
        if line == ".Ex -std":
            # mdoc's standard sentence says ">0 if an error occurs"; DoseTap's statuses say more.
            out.append("Exit status: 0 done, 1 an error, 2 refused by the dose rules, 64 a usage error.")
            continue
        if line == ".Nm" and command:
            out.append(f'.Nm "{command}"')
            continue
        out.append(line)
    if command is None:
        sys.exit(f"man-names: {page}: no NAME section")
    page.write_text("\n".join(out), encoding="utf-8")
