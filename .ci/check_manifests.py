#!/usr/bin/env python3
"""Checks the workspace's manifests against what they claim.

1. MSRV: no package in Cargo.lock declares a `rust-version` above the workspace's,
   and every member inherits the workspace's. (The code's own use of newer std APIs
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
    declared = {p.get("rust_version") for p in member_pkgs}
    problems = []
    if len(declared) != 1 or None in declared:
        problems.append(f"members declare different rust-version values: {sorted(map(str, declared))}")
    msrv = max((version_key(v) for v in declared if v), default=(0, 0, 0))
    msrv_text = ".".join(map(str, msrv))
    needs = sorted(
        (
            (version_key(p["rust_version"]), p["name"], p["version"])
            for p in meta["packages"]
            if p.get("rust_version") and p["id"] not in members
        ),
        reverse=True,
    )
    for need, name, version in needs:
        if need > msrv:
            problems.append(
                f"{name} {version} needs Rust {'.'.join(map(str, need))}, above the declared rust-version {msrv_text}"
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
    top = needs[0] if needs else None
    print(
        f"manifest check: rust-version {msrv_text} holds for {len(needs)} dependencies"
        + (f" (the highest: {top[1]} {top[2]} at {'.'.join(map(str, top[0]))})" if top else "")
        + f"; {len(member_pkgs)} members publishable or marked publish = false"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
