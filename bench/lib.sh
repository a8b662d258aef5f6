# bench/lib.sh - shell helpers the benchmark scripts share (sourced).
#
#   now                         # wall clock, seconds with nanoseconds
#   secs T0 T1                  # T1 - T0, two decimals
#   bench_drop_cache FILE       # drop FILE from the page cache: drop_caches when
#                               # permitted, else posix_fadvise(DONTNEED); prints
#                               # the method used (drop_caches, fadvise or none)
#   bench_profile GEN OUT KIND SEED SIZE
#                               # prints OUT/KIND-SIZE-sSEED.xplane.pb, made with
#                               # xprofs-gen (and its --stats JSON) when missing
#   bench_head TITLE LINE... -- COLUMN...
#                               # a results file's head: "# TITLE", the LINEs of
#                               # context between blank lines, then the Markdown
#                               # table header with COLUMNs
# Benchmarks measure; they assert nothing beyond "the bytes read are right".

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

bench_drop_cache() {
	if sync && echo 3 2>/dev/null >/proc/sys/vm/drop_caches; then
		echo drop_caches
	elif /usr/bin/python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"; then
		echo fadvise
	else
		echo none
	fi
}

bench_profile() {
	local gen=$1 out=$2 kind=$3 seed=$4 size=$5 f
	f=$out/$kind-$size-s$seed.xplane.pb
	if [ ! -s "$f" ]; then
		echo "generating $f ..." >&2
		/usr/bin/time -f "  generated in %e s, peak RSS %M KB" "$gen" --kind "$kind" --seed "$seed" \
			--size "$size" -o "$f" --stats >"$f.stats.json"
	fi
	echo "$f"
}

bench_head() {
	echo "# $1"
	echo
	shift
	while [ "$1" != -- ]; do
		echo "$1"
		shift
	done
	shift
	echo
	printf '|'
	printf ' %s |' "$@"
	printf '\n|'
	printf -- '---|%.0s' "$@"
	printf '\n'
}
