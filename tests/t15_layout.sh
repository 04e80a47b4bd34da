#!/usr/bin/env bash
# The shape of user/ (README.md "Layout", user/README.md):
#  1. no include circle: the graph of `#include "..."` between the modules
#     of user/ (a module is x.c with its x.h) has no cycle, nor has the
#     graph between its folders, and util.[ch] include nothing of user/;
#  2. no call circle: the same for the built objects, by the symbols each
#     one uses that another defines (nm): a callback passed as a pointer is
#     the one way back up;
#  3. every folder of user/ says what it owns (user/README.md names it);
#  4. a default --help prints (cli/defaults.h) is the one its man page
#     gives for that option.
# Needs no root: nothing is traced.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed"
command -v nm >/dev/null || skip "nm not installed (Debian package binutils)"

for cmd in trace record top explain; do
    "$AMPTRACE" "$cmd" --help >"$AMP_TMP/help.$cmd"
done
# The objects of the build under test: build-asan's for `make test-asan`.
build=${AMP_BUILD:-$(dirname "$AMPTRACE")}
[[ -e $build/user/util.o ]] || build=$AMP_ROOT/build
python3 - "$AMP_ROOT" "$build" "$AMP_TMP" <<'PY'
import os, re, subprocess, sys
root, build, tmp = sys.argv[1:4]
user = os.path.join(root, "user")
def fail(m): print("FAIL:", m, file=sys.stderr); sys.exit(1)
def ok(m): print("ok:", m)

def module(path):                      # user/sink/report.c -> out/report
    return os.path.splitext(os.path.relpath(path, user))[0]
def folder(mod):
    return mod.split("/")[0] if "/" in mod else "."

def cycle(graph):
    """A cycle of graph (node -> set of nodes) as a list, or None."""
    state, stack = {}, []
    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None
    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None

# 1. includes
files = [os.path.join(d, f) for d, _, fs in os.walk(user) for f in fs if f.endswith((".c", ".h"))]
inc = {}
for path in files:
    src = module(path)
    inc.setdefault(src, set())
    for name in re.findall(r'^#include "([^"]+)"', open(path).read(), re.M):
        for cand in (os.path.join(user, name), os.path.join(os.path.dirname(path), name)):
            if os.path.exists(cand):
                dst = module(cand)
                if dst != src:
                    inc[src].add(dst)
                break
c = cycle(inc)
if c:
    fail("include circle between modules: " + " -> ".join(c))
edges = sum(len(v) for v in inc.values())
ok(f"{len(inc)} modules, {edges} include edges, no circle")
folders = {}
for s, ds in inc.items():
    for d in ds:
        if folder(s) != folder(d):
            folders.setdefault(folder(s), set()).add(folder(d))
c = cycle(folders)
if c:
    fail("include circle between folders: " + " -> ".join(c))
def layers(graph):
    """Nodes bottom up: each after everything it depends on."""
    nodes = sorted(graph.keys() | {d for v in graph.values() for d in v})
    done, order = set(), []
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in done and graph.get(n, set()) <= done]
        order += ready
        done |= set(ready)
    return order
ok("folders, bottom up: " + ", ".join("util" if f == "." else f for f in layers(folders)) +
   "; no circle")
if inc.get("util"):
    fail(f"util includes {sorted(inc['util'])}: it must depend on nothing of user/")
ok("util.[ch] include nothing of user/")

# 2. calls, from the objects of this build
objs = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(build, "user"))
        for f in fs if f.endswith(".o")]
objs = [o for o in objs if os.path.exists(os.path.join(user, os.path.relpath(o, os.path.join(build, "user"))[:-2] + ".c"))]
if len(objs) < len([f for f in files if f.endswith(".c")]):
    fail(f"{build}/user holds {len(objs)} objects for {len([f for f in files if f.endswith('.c')])} "
         "sources: build first (make)")
defined, used = {}, {}
for o in objs:
    mod = module(os.path.join(user, os.path.relpath(o, os.path.join(build, "user"))))
    out = subprocess.check_output(["nm", o], text=True)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRV":
            defined[parts[2]] = mod
        elif len(parts) == 2 and parts[0] == "U":
            used.setdefault(mod, set()).add(parts[1])
calls = {m: {defined[s] for s in syms if s in defined and defined[s] != m} for m, syms in used.items()}
c = cycle(calls)
if c:
    fail("call circle between modules: " + " -> ".join(c))
ok(f"{len(objs)} objects, {sum(len(v) for v in calls.values())} call edges between modules, no circle")
if calls.get("util"):
    fail(f"util calls {sorted(calls['util'])}")

# 3. every folder says what it owns
readme = open(os.path.join(user, "README.md")).read()
for d in sorted(os.listdir(user)):
    if os.path.isdir(os.path.join(user, d)) and not re.search(rf"^- `{d}/`", readme, re.M):
        fail(f"user/README.md does not say what user/{d}/ owns")
ok("user/README.md says what each folder owns")

# 4. defaults: --help against the man pages
def roff_text(lines):
    out = []
    for l in lines:
        l = re.sub(r"\\f[BIRP]", "", l).replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "\\")
        if l.startswith("."):
            l = re.sub(r"^\.\w+\s*", "", l).replace('"', "")
        out.append(l)
    return re.sub(r"\s+", " ", " ".join(out))

def man_items(page):
    """Option name -> the text of its item in the page."""
    lines = open(page).read().splitlines()
    items, cur = {}, None
    for i, l in enumerate(lines):
        tag = lines[i + 1] if l == ".TP" and i + 1 < len(lines) else ""
        if re.match(r"\.(B|BR|RB|BI)\s+\\-", tag) or l.startswith((".SH", ".SS")):
            cur = None
        if cur is not None:
            items[cur].append(l)
        if re.match(r"\.(B|BR|RB|BI)\s+\\-", tag):
            names = re.findall(r"--?[A-Za-z?][\w-]*", roff_text([tag]))
            cur = names[-1]
            items[cur] = []
    return {k: roff_text(v) for k, v in items.items()}

checked = 0
for cmd in ("trace", "record", "top", "explain"):
    text = open(f"{tmp}/help.{cmd}").read()
    opts, cur = {}, None
    for l in text.splitlines():
        m = re.match(r"\s{1,6}(?:-\w, )?(--[\w-]+)(?:=\S+)?\s+(.*)", l)
        if m:
            cur = m.group(1)
            opts[cur] = m.group(2)
        elif cur and re.match(r"\s{20,}\S", l):
            opts[cur] += " " + l.strip()
        else:
            cur = None
    page = f"{root}/scripts/man/amptrace-{cmd}.8"
    items = man_items(page)
    for opt, desc in opts.items():
        m = re.search(r"\((?:default )?([0-9][0-9.]*|auto)[;)]", desc)
        if not m:
            continue
        val = m.group(1)
        item = items.get(opt)
        if item is None:
            fail(f"amptrace-{cmd}(8) has no item for {opt}")
        if not re.search(rf"\({re.escape(val)}\b|default {re.escape(val)}\b|\b{re.escape(val)} \(default\)", item):
            fail(f"{opt}: --help says the default is {val}, amptrace-{cmd}(8) says: {item[:200]}")
        checked += 1
    for name, val in re.findall(r"(\w+) is in seconds \(default ([0-9.]+)\)", text):
        if f"{name} is in seconds (default {val}" not in roff_text(open(page).read().splitlines()):
            fail(f"{name}: --help says the default is {val}; amptrace-{cmd}(8) does not")
        checked += 1
if checked < 10:
    fail(f"only {checked} defaults found in --help")
ok(f"{checked} defaults of --help are the man pages' (trace, record, top, explain)")
PY
