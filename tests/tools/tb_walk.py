#!/usr/bin/python3
"""Lists a profile log directory the way TensorBoard's XProf plugin discovers it.

usage: tb_walk.py LOGDIR
prints {"runs": {"<run>": {"<session>": ["<host>", ...]}}} (sorted), where
- runs: every directory named "profile" whose parent is named "plugins",
  found by walking the WHOLE tree (XProf globs "**/profile"); the run name is
  the path of the grandparent of plugins/profile relative to LOGDIR, "." for
  the root itself;
- sessions: the sub-directories of <run>/plugins/profile;
- hosts: the entries of the session directory (not recursive) named
  "*.xplane.pb", minus that suffix; a directory with such a name counts too,
  as it would for XProf's glob.
Source of the rules: ../shared/reference/tensorboard.md. Local paths only
(use it on a mount to check a gs:// logdir). Symlinks are not followed.
"""
import json
import os
import sys

SUFFIX = ".xplane.pb"


def walk(logdir):
    runs = {}
    for dirpath, dirnames, _ in os.walk(logdir):
        dirnames.sort()
        if os.path.basename(dirpath) != "profile":
            continue
        plugins = os.path.dirname(dirpath)
        if os.path.basename(plugins) != "plugins":
            continue
        run = os.path.relpath(os.path.dirname(plugins), logdir)
        sessions = {}
        for s in sorted(os.listdir(dirpath)):
            sdir = os.path.join(dirpath, s)
            if not os.path.isdir(sdir) or os.path.islink(sdir):
                continue
            sessions[s] = sorted(h[:-len(SUFFIX)] for h in os.listdir(sdir)
                                 if h.endswith(SUFFIX) and len(h) > len(SUFFIX))
        runs[run] = sessions
    return {"runs": dict(sorted(runs.items()))}


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.stderr.write("usage: tb_walk.py LOGDIR\n")
        return 2
    json.dump(walk(sys.argv[1]), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
