#!/usr/bin/env bash
# tests/gcs/test_mount.sh - a gs:// source through a real /dev/fuse mount
# against the offline emulator: the same generic checks as a local source
# (tests/fs/check_mount.py: byte-identical mirror with random preads, sizes
# and mtimes, TensorBoard walk, runs/ tree, every generated JSON view), then
# the writes TensorBoard makes landing in the bucket (checked with plain
# HTTP, not through xprofs), unlink/rename/mkdir/rmdir, the no-overwrite
# rule for profiles, a new profile appearing in runs/, an object replaced
# under an open reader giving ESTALE, and status.json's gcs counters.
# Skips (77) without /dev/fuse, the daemon, or the emulator.
. "${XPROFS_SOURCE_ROOT:?}/tests/lib/lib.sh"
xp_require_fuse
[ -x "$XP_BIN" ] || xp_skip "$XP_BIN not built"
xp_workdir
W=$XP_WORK
HERE=$XPROFS_SOURCE_ROOT/tests/gcs
SRC=$W/src MNT=$W/mnt
mkdir -p "$SRC" "$MNT"
xp_emulator_start "$W/emu"
rc=$?
[ $rc = 77 ] && xp_skip "emulator not installed (tests/gcs/setup-emulator.sh)"
[ $rc = 0 ] || xp_fail "emulator did not start"
PORT=$XP_EMU_PORT
EP=http://127.0.0.1:$PORT
B=xprofs-mount P=logs

xp_sample_logdir "$SRC" || true
GEN=$XPROFS_BUILD_ROOT/tools/xprofs-gen
if [ -x "$GEN" ]; then
	"$GEN" --demo "$SRC/gen" >/dev/null || xp_fail "xprofs-gen --demo"
fi
mkdir -p "$SRC/blobs/plugins/profile/s"
head -c 5500000 /dev/urandom >"$SRC/blobs/plugins/profile/s/big.SSTABLE"
[ -n "$(find "$SRC" -name '*.xplane.pb' | head -1)" ] || echo "# no samples and no generator: blobs only"
STORAGE_EMULATOR_HOST=$EP node "$HERE/emulator/seed.js" "$SRC" "gs://$B/$P" >/dev/null || xp_fail "seed"

# GCS keeps its own times: give the local copy the objects' "updated" times so
# the mirror's mtime check compares what xprofs reports with what GCS says.
/usr/bin/python3 - "$EP" "$B" "$P" "$SRC" <<'PY' || xp_fail "sync mtimes"
import calendar, json, os, sys, urllib.parse, urllib.request
ep, b, p, src = sys.argv[1:]
tok = None
while True:
    q = {"prefix": p + "/", "maxResults": "1000"}
    if tok:
        q["pageToken"] = tok
    page = json.load(urllib.request.urlopen("%s/storage/v1/b/%s/o?%s" % (ep, b, urllib.parse.urlencode(q))))
    for it in page.get("items", []):
        u = it["updated"]
        sec = calendar.timegm(__import__("time").strptime(u[:19], "%Y-%m-%dT%H:%M:%S"))
        frac = u[19:].rstrip("Z")
        ns = sec * 10**9 + (int((frac[1:] + "000000000")[:9]) if frac.startswith(".") else 0)
        os.utime(os.path.join(src, it["name"][len(p) + 1:]), ns=(ns, ns))
    tok = page.get("nextPageToken")
    if not tok:
        break
PY

obj_url() { echo "$EP/storage/v1/b/$B/o/$(jq -rn --arg x "$P/$1" '$x|@uri')"; }
obj_get() { curl -sf "$(obj_url "$1")?alt=media"; }
obj_exists() { curl -sf -o /dev/null "$(obj_url "$1")"; }

xp_mount "gs://$B/$P" "$MNT" -o "endpoint=$EP,anonymous,cache_dir=$W/cache,refresh=2"
xp_ok "status.json names the gcs backend" bash -c "jq -e '.. | objects | select(.backend? == \"gcs\")' '$MNT/status.json' >/dev/null"
XP_BAD_PROFILES="" /usr/bin/python3 "$XPROFS_SOURCE_ROOT/tests/fs/check_mount.py" "$SRC" "$MNT" ||
	xp_fail "generic mount checks over gs://"

L=$MNT/logdir
prof=$(cd "$SRC" && find . -name '*.xplane.pb' -path '*/plugins/profile/*' | sort | head -1 | sed 's|^\./||')
[ -n "$prof" ] || prof=blobs/plugins/profile/s/big.SSTABLE
sess=$(dirname "$prof")

# ---- writes TensorBoard makes land in the bucket ----------------------------
echo '{"a":1}' >"$L/$sess/.cached_tools.json" || xp_fail "create .cached_tools.json"
xp_ok "a new file is an object in the bucket" bash -c "[ \"\$(curl -sf '$(obj_url "$sess/.cached_tools.json")?alt=media')\" = '{\"a\":1}' ]"
xp_write_sstable "$L/$sess/host.SSTABLE" || xp_fail "random-access write of an SSTABLE"
xp_sstable_bytes >"$W/sstable"
obj_get "$sess/host.SSTABLE" >"$W/sstable.got"
xp_same "SSTABLE written at offsets is the object's content" "$W/sstable.got" "$W/sstable"
mv "$L/$sess/.cached_tools.json" "$L/$sess/.cached_tools.json.tmp" || xp_fail "rename"
xp_ok "rename moves the object" bash -c "! curl -sf -o /dev/null '$(obj_url "$sess/.cached_tools.json")' && curl -sf -o /dev/null '$(obj_url "$sess/.cached_tools.json.tmp")'"
rm "$L/$sess/.cached_tools.json.tmp" "$L/$sess/host.SSTABLE" || xp_fail "unlink"
xp_ok "unlinks delete the objects" bash -c "! curl -sf -o /dev/null '$(obj_url "$sess/host.SSTABLE")'"
mkdir "$L/$sess/tmpdir" && rmdir "$L/$sess/tmpdir" || xp_fail "mkdir/rmdir"
xp_ok "rmdir of a non-empty directory fails" bash -c "! rmdir '$L/$sess' 2>/dev/null"

# ---- profiles are never overwritten ---------------------------------------
if [ "${prof%.xplane.pb}" != "$prof" ]; then
	if out=$(bash -c "echo x >>'$L/$prof'" 2>&1); then xp_fail "appending to a profile succeeded"; fi
	xp_ok "appending to a profile: EPERM" grep -q "Operation not permitted" <<<"$out"
	if out=$(cp "$SRC/$prof" "$L/$prof" 2>&1); then xp_fail "overwriting a profile succeeded"; fi
	xp_ok "overwriting a profile: EPERM" grep -q "Operation not permitted" <<<"$out"
	xp_same "the profile object is unchanged" <(curl -sf "$(obj_url "$prof")?alt=media") "$SRC/$prof"
	run=${prof%%/plugins/profile/*}
	[ "${prof#plugins/profile/}" != "$prof" ] && run=_root
	newsess=${sess%/*}/gcs_new_session
	mkdir "$L/$newsess" && cp "$SRC/$prof" "$L/$newsess/newhost.xplane.pb" || xp_fail "create a new profile"
	xp_same "the new profile is in the bucket, identical" <(curl -sf "$(obj_url "$newsess/newhost.xplane.pb")?alt=media") "$SRC/$prof"
	xp_ok "the new session and host appear in runs/" test -d "$MNT/runs/$run/gcs_new_session/newhost"
	xp_ok "its summary.json decodes" bash -c "jq -e . '$MNT/runs/$run/gcs_new_session/newhost/summary.json' >/dev/null"
fi

# ---- changes made by another client ------------------------------------------
head -c 1000 /dev/urandom >"$W/other"
FRESH=blobs/plugins/profile/s/fresh.SSTABLE
head -c 5500000 /dev/urandom >"$W/fresh"
curl -sf -X POST --data-binary @"$W/fresh" -H 'Content-Type: application/octet-stream' \
	"$EP/upload/storage/v1/b/$B/o?uploadType=media&name=$(jq -rn --arg x "$P/$FRESH" '$x|@uri')" >/dev/null ||
	xp_fail "upload by another client"
curl -sf -X POST --data-binary @"$W/other" -H 'Content-Type: application/octet-stream' \
	"$EP/upload/storage/v1/b/$B/o?uploadType=media&name=$(jq -rn --arg x "$P/$sess/other-client.txt" '$x|@uri')" >/dev/null ||
	xp_fail "upload by another client"
# refresh=2 and the kernel's attribute cache: it shows after the refresh interval
xp_eventually "an object uploaded by another client appears after the refresh interval" cmp -s "$W/other" "$L/$sess/other-client.txt"
xp_eventually "... with its size" test "$(stat -c %s "$L/$FRESH" 2>/dev/null)" = 5500000

# ---- an object replaced under an open reader: ESTALE -------------------------
# (a never-read object: blocks already cached stay a consistent old version)
BIG=$FRESH
/usr/bin/python3 - "$L/$BIG" "$EP" "$B" "$P/$BIG" <<'PY' || xp_fail "ESTALE"
import errno, os, sys, urllib.parse, urllib.request
path, ep, b, name = sys.argv[1:]
fd = os.open(path, os.O_RDONLY)
first = os.pread(fd, 4096, 0)
assert len(first) == 4096
data = os.urandom(5500000)
req = urllib.request.Request("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (ep, b, urllib.parse.quote(name, safe="")),
                             data=data, headers={"Content-Type": "application/octet-stream"}, method="POST")
urllib.request.urlopen(req).read()
try:
    got = os.pread(fd, 4096, 5000000)
except OSError as e:
    assert e.errno == errno.ESTALE, e
    print("ok - a reader of a replaced object gets ESTALE, not mixed data")
else:
    sys.exit("not ok - read %d bytes of a replaced object" % len(got))
os.close(fd)
PY
xp_eventually "a fresh open after the refresh reads the new version" bash -c "cat '$L/$BIG' >'$W/big.new' 2>/dev/null; cmp -s '$W/big.new' <(curl -sf '$(obj_url "$BIG")?alt=media')"

# ---- a long sequential read streams in large ranges, within the memory budget
# 100 MB, more than the 64 MiB block budget: read-ahead must keep working once
# the budget is full of idle cached blocks (it used to fall back to one 1 MiB
# GET per block there: about 60 GETs for this file).
head -c 100000000 /dev/urandom >"$W/stream.bin"
curl -sf -o /dev/null -X POST --data-binary @"$W/stream.bin" \
	"$EP/upload/storage/v1/b/$B/o?uploadType=media&name=$(jq -rn --arg x "$P/stream/big.bin" '$x|@uri')" ||
	xp_fail "upload stream/big.bin"
xp_eventually "the uploaded stream/big.bin shows after the refresh" test -e "$L/stream/big.bin"
g0=$(jq '.store.requests.get' "$MNT/status.json")
xp_same "a 100 MB sequential read is byte-identical" "$L/stream/big.bin" "$W/stream.bin"
g1=$(jq '.store.requests.get' "$MNT/status.json")
echo "# 100 MB sequential read: $((g1 - g0)) GETs"
xp_ok "... in large ranges ($((g1 - g0)) GETs, at most 40)" test $((g1 - g0)) -le 40
xp_okq "... with block memory within block_mem_max" \
	jq -e '.store.blocks.mem_bytes <= 64 * 1048576' "$MNT/status.json"
rm -f "$W/stream.bin"

# ---- counters ---------------------------------------------------------------
jq -c .store "$MNT/status.json" | sed 's/^/# /'
if jq -e '.store | .requests.get > 0 and .requests.list > 0 and .requests.upload > 0 and .requests.delete > 0 and .stale >= 1' \
	"$MNT/status.json" >/dev/null; then
	xp_pass "status.json has the gcs request counters"
else
	xp_fail "status.json has the gcs request counters"
fi
# one set of counters (docs/fs.md): a gs:// mount's cache lookups are its views' and its blocks'
xp_okq "cache.hits = counters.view_cache_hits + store.blocks.disk_hits ($(jq -c '[.cache.hits, .counters.view_cache_hits, .store.blocks.disk_hits]' "$MNT/status.json"))" \
	jq -e '.cache.hits == .counters.view_cache_hits + .store.blocks.disk_hits' "$MNT/status.json"
xp_ok "clean unmount" xp_umount "$MNT"
echo "# all gcs mount checks passed"
