#!/usr/bin/env bash
# tests/check_layers.sh — enforces the dependency rule of docs/ARCHITECTURE.md §2 on #include
# lines.
# Layer: tests. Usage: tests/check_layers.sh [ROOT]   (ROOT defaults to the repo holding this
# script; `make check-layers` runs it)
#   core/  only core/ headers, libc/POSIX, <cblas.h>, <cjson/cJSON.h>, <fp16.h>, <omp.h>,
#          <pthread.h>; and no printf/puts/exit/abort/stdout/stderr in core/*.c (core returns
#          strings and fx_err, never prints or ends the process)
#   pt2/   core public headers, pt2/ headers, <zip.h>, <cjson/cJSON.h>, libc/POSIX
#   lua/   core public headers (not *_impl.h, not core/kernels/), lua/ headers, pt2/pt2.h,
#          <lua.h>, <lauxlib.h>, <lualib.h>, <cjson/cJSON.h>, libc/POSIX
#   viz/   core public headers, viz/ headers, <graphviz/...>, libc/POSIX
#   repl/  lua/fxlua.h, viz/fxviz.h, core/fx.h, repl/ headers, <histedit.h>,
#          <editline/readline.h>, <lua.h>, <lauxlib.h>, <lualib.h>, libc/POSIX
# Quoted includes are resolved from the repo root when they contain a '/', else from the
# including file's folder. Prints every violation as file:line and exits 1; otherwise prints
# "check-layers: ok".
set -u
cd "${1:-$(dirname "$0")/..}" || exit 2

LIBC='assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h locale.h
math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h stdio.h
stdlib.h stdnoreturn.h string.h tgmath.h threads.h time.h uchar.h wchar.h wctype.h
aio.h arpa/inet.h dirent.h dlfcn.h fcntl.h fnmatch.h glob.h grp.h iconv.h langinfo.h libgen.h
netdb.h netinet/in.h poll.h pthread.h pwd.h regex.h sched.h semaphore.h spawn.h strings.h
syslog.h termios.h unistd.h utime.h wordexp.h alloca.h endian.h malloc.h'

violations=0

is_libc() {   # $1 = header inside <>
    case "$1" in sys/*.h) return 0 ;; esac
    local h
    for h in $LIBC; do [ "$h" = "$1" ] && return 0; done
    return 1
}

is_core_public() {   # $1 = resolved path
    case "$1" in
    core/kernels/*) return 1 ;;
    core/*_impl.h) return 1 ;;
    core/*.h | core/*.def) return 0 ;;
    esac
    return 1
}

report() {   # file line text why
    echo "$1:$2: $3  ($4)"
    violations=$((violations + 1))
}

# allowed LAYER KIND NAME -> 0 when the include is allowed
allowed() {
    local layer=$1 kind=$2 name=$3
    if [ "$kind" = angle ]; then
        is_libc "$name" && return 0
        case "$layer:$name" in
        core:cblas.h | core:cjson/cJSON.h | core:fp16.h | core:omp.h | core:pthread.h) return 0 ;;
        core:sanitizer/asan_interface.h | core:valgrind/memcheck.h) return 0 ;;
        lua:lua.h | lua:lauxlib.h | lua:lualib.h | lua:cjson/cJSON.h) return 0 ;;
        pt2:zip.h | pt2:cjson/cJSON.h) return 0 ;;
        viz:graphviz/*) return 0 ;;
        repl:histedit.h | repl:editline/readline.h) return 0 ;;
        repl:lua.h | repl:lauxlib.h | repl:lualib.h) return 0 ;;
        esac
        return 1
    fi
    case "$layer" in
    core) case "$name" in core/*) return 0 ;; esac ;;
    lua)
        is_core_public "$name" && return 0
        case "$name" in lua/*.h | pt2/pt2.h) return 0 ;; esac
        ;;
    pt2)
        is_core_public "$name" && return 0
        case "$name" in pt2/*.h) return 0 ;; esac
        ;;
    viz)
        is_core_public "$name" && return 0
        case "$name" in viz/*.h) return 0 ;; esac
        ;;
    repl)
        case "$name" in lua/fxlua.h | viz/fxviz.h | core/fx.h | repl/*.h) return 0 ;; esac
        ;;
    esac
    return 1
}

rule_text() {
    case "$1" in
    core) echo "core/ may include only core/ headers, libc/POSIX, cblas, cJSON, fp16, omp, pthread" ;;
    lua) echo "lua/ may include only core public headers, lua/ headers, pt2/pt2.h, lua.h/lauxlib.h/lualib.h, cJSON, libc" ;;
    pt2) echo "pt2/ may include only core public headers, pt2/ headers, <zip.h>, cJSON, libc" ;;
    viz) echo "viz/ may include only core public headers, viz/ headers, <graphviz/...>, libc" ;;
    repl) echo "repl/ may include only lua/fxlua.h, viz/fxviz.h, core/fx.h, repl/ headers, libedit, lua.h/lauxlib.h/lualib.h, libc" ;;
    esac
}

for layer in core pt2 lua viz repl; do
    [ -d "$layer" ] || continue
    while IFS= read -r -d '' f; do
        dir=$(dirname "$f")
        while IFS=: read -r ln text; do
            if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^>]+)\> ]]; then
                kind=angle
                name=${BASH_REMATCH[1]}
            elif [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
                kind=quote
                name=${BASH_REMATCH[1]}
                case "$name" in */*) ;; *) name="$dir/$name" ;; esac
            else
                continue
            fi
            allowed "$layer" "$kind" "$name" || report "$f" "$ln" "$(echo "$text" | sed 's/^[[:space:]]*//')" "$(rule_text "$layer")"
        done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include' "$f")
    done < <(find "$layer" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
done

# core/*.c never prints or ends the process: strip comments and string literals (keeping line
# numbers), then look for the calls.
if [ -d core ]; then
    tmpf=$(mktemp)
    while IFS= read -r -d '' f; do
        perl -0777 -ne '
            s{("(?:\\.|[^"\\\n])*"|'"'"'(?:\\.|[^'"'"'\\\n])*'"'"'|/\*.*?\*/|//[^\n]*)}{
                my $t = $1; ($t =~ m{^/}) ? ("\n" x ($t =~ tr/\n//)) : "\"\""
            }gse;
            my $n = 0;
            for my $line (split /\n/, $_, -1) {
                $n++;
                my @m = ($line =~ /\b(printf|vprintf|puts|putchar|perror|exit|_Exit|_exit|abort)\s*\(/g);
                push @m, ($line =~ /\b(stdout|stderr)\b/g);
                print "$n:" . join(", ", @m) . "\n" if @m;
            }' "$f" > "$tmpf"
        while IFS=: read -r ln what; do
            report "$f" "$ln" "uses $what" "core/ never prints, exits or aborts: return an fx_err"
        done < "$tmpf"
    done < <(find core -type f -name '*.c' -print0 | sort -z)
    rm -f "$tmpf"
fi

if [ "$violations" -gt 0 ]; then
    echo "check-layers: $violations violation(s)"
    exit 1
fi
echo "check-layers: ok"
