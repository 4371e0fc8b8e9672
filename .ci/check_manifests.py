#!/usr/bin/env python3
"""Checks the workspace's manifests against what they claim.

1. MSRV: every member declares a `rust-version`, and no package it builds with (its
   dependencies, dev ones included, and theirs) declares a higher one. Members may
   differ: the library crates keep the workspace's, farsight-bevy needs Bevy's. (The code's own use of newer std APIs
   is caught by clippy's `incompatible_msrv` lint, which reads the same field.)
2. Publishable: every member that may be published has a version, a description and
   a license, and every normal or build path dependency of it also names a version.

No other toolchain can be installed here, so this reads `cargo metadata` instead of
building with the MSRV compiler. Exit status 1 and one line per problem on failure.
"""
import json
import subprocess
import sys


def version_key(v):
    parts = [int(p) for p in v.split("-")[0].split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    members = set(meta["workspace_members"])
    packages = {p["id"]: p for p in meta["packages"]}
    member_pkgs = [packages[m] for m in members]
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    problems = []
    needs_all = []

    def closure(root):
        seen, todo = set(), [root]
        while todo:
            node = nodes[todo.pop()]
            for d in node["deps"]:
                kinds = {k.get("kind") for k in d["dep_kinds"]}
                # A member's dev-dependencies count; below it, only what builds it.
                if node["id"] != root and kinds <= {"dev"}:
                    continue
                if d["pkg"] not in seen:
                    seen.add(d["pkg"])
                    todo.append(d["pkg"])
        return seen

    for p in sorted(member_pkgs, key=lambda p: p["name"]):
        declared = p.get("rust_version")
        if not declared:
            problems.append(f"{p['name']}: no rust-version in its manifest")
            continue
        msrv = version_key(declared)
        for dep_id in closure(p["id"]):
            dep = packages[dep_id]
            need = dep.get("rust_version")
            if not need:
                continue
            needs_all.append((version_key(need), dep["name"], dep["version"], p["name"], declared))
            if version_key(need) > msrv:
                problems.append(
                    f"{p['name']} (rust-version {declared}): {dep['name']} {dep['version']} needs Rust {need}"
                )
    for p in sorted(member_pkgs, key=lambda p: p["name"]):
        if p.get("publish") == []:
            continue  # publish = false
        for field in ("description", "license", "version"):
            if not p.get(field):
                problems.append(f"{p['name']}: no {field} in its manifest")
        for d in p["dependencies"]:
            # A path-only dev-dependency is dropped by `cargo publish`; one with a
            # version must itself be published first, so dev ones are not checked.
            if d.get("kind") == "dev":
                continue
            if d.get("path") and d.get("req") in (None, "*"):
                kind = d.get("kind") or "normal"
                problems.append(
                    f"{p['name']}: path dependency {d['name']} ({kind}) has no version"
                )
    if problems:
        for line in problems:
            print(f"manifest check: {line}", file=sys.stderr)
        return 1
    versions = sorted({p["rust_version"] for p in member_pkgs})
    top = max(needs_all) if needs_all else None
    print(
        f"manifest check: every member's rust-version ({', '.join(versions)}) holds for what it builds with"
        + (f" (the highest need: {top[1]} {top[2]} at {'.'.join(map(str, top[0]))}, for {top[3]})" if top else "")
        + f"; {len(member_pkgs)} members publishable or marked publish = false"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
