import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkCommandPrograms } from '../../../src/policy/command-policy.js';
import { analyseArgv, analyseCommandLine, type UnknowableKind } from '../../../src/policy/shell-analysis.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';

beforeAll(async () => {
  await loadShellParser();
});

/** A command line, every program it must report (as a set), and the kinds of "could run any program" it must report ([] = every program named). */
type Case = [line: string, programs: string[], unknowable: UnknowableKind[]];

const CASES: Case[] = [
  // The issue's examples (section 1 and 5).
  ['if true; then rm victim.txt; fi', ['true', 'rm'], []],
  ['{ rm x; }', ['rm'], []],
  ['echo rm x | sh', ['echo', 'sh'], ['runs-code']],
  ['$(echo rm) x', ['echo'], ['computed-name']],
  ["sh -c -- 'rm x'", ['sh', 'rm'], ['runs-code']],
  ['/bin/r[m] x', [], ['computed-name']],
  ['exec -a y rm x', ['exec', 'rm'], ['wrapper']],
  ['rm${IFS}x', [], ['computed-name']],
  ['eval "rm x"', ['eval', 'rm'], ['runs-code']],
  ["trap 'rm x' EXIT", ['trap', 'rm'], ['runs-code']],
  ['. ./x.sh', ['.'], ['runs-code']],
  ['source x.sh', ['source'], ['runs-code']],
  ["sh <<<'rm x'", ['sh'], ['runs-code']],
  ["bash <<< 'rm x'", ['bash'], ['runs-code']],
  ["env -S 'rm x'", ['env', 'rm'], ['runs-code']],
  ['X=rm; $X x', [], ['computed-name']],
  ['timeout 60 rm -rf .', ['timeout', 'rm'], ['wrapper']],
  ["busybox sh -c 'rm x'", ['busybox', 'sh', 'rm'], ['multi-call', 'runs-code']],
  ['nice rm x', ['nice', 'rm'], ['wrapper']],
  // Compound commands: every part is a program.
  ['while rm x; do :; done', ['rm', ':'], []],
  ['until false; do rm x; done', ['false', 'rm'], []],
  ['for f in a b; do rm "$f"; done', ['rm'], []],
  ['for ((i=0; i<2; i++)); do rm x; done', ['rm'], []],
  ['case x in x) rm y;; *) ls;; esac', ['rm', 'ls'], []],
  ['(rm x)', ['rm'], []],
  ['ls && (cd a; rm b) || { rm c; }', ['ls', 'cd', 'rm'], []],
  ['! rm x', ['rm'], []],
  ['if false; then ls; elif true; then rm x; else cat y; fi', ['false', 'ls', 'true', 'rm', 'cat'], []],
  ['select x in a; do rm y; done', ['rm'], []],
  ['[[ -f x ]] && rm y', ['rm'], []],
  ['[ -f x ] || rm y', ['rm'], []],
  ['ls |& rm x', ['ls', 'rm'], []],
  ['ls; rm x & wait', ['ls', 'rm', 'wait'], []],
  ['echo a; # x\nrm b', ['echo', 'rm'], []],
  ['ls\nrm x', ['ls', 'rm'], []],
  ['echo hi # ; rm x', ['echo'], []],
  ['echo a#b; rm x', ['echo', 'rm'], []],
  // Substitutions anywhere are commands too.
  ['echo $(rm x)', ['echo', 'rm'], []],
  ['echo "$(rm x)"', ['echo', 'rm'], []],
  ['echo `rm x`', ['echo', 'rm'], []],
  ['echo "a`rm y`"', ['echo', 'rm'], []],
  ['echo `echo \\`rm x\\``', ['echo', 'rm'], []],
  ['a=$(rm x)', ['rm'], []],
  ['x=`rm y` ls', ['rm', 'ls'], []],
  ['echo ${x:-$(rm y)}', ['echo', 'rm'], []],
  ['cat > $(rm x)', ['cat', 'rm'], []],
  ['cat <(rm x)', ['cat', 'rm'], []],
  ['echo >(rm x)', ['echo', 'rm'], []],
  ['diff <(ls) >(wc)', ['diff', 'ls', 'wc'], []],
  ['arr[$(rm x)]=1', ['rm'], ['changes-lookup']],
  ['echo $(echo $(rm x))', ['echo', 'rm'], []],
  ['cat <<EOF\n$(rm x)\nEOF', ['cat', 'rm'], []],
  ['cat <<EOF\na `rm y` b\nEOF', ['cat', 'rm'], []],
  ['cat <<-EOF\n\t${x:-$(rm y)}\n\tEOF', ['cat', 'rm'], []],
  ["cat <<'EOF'\n$(rm x)\nEOF", ['cat'], []],
  ['cat <<\\EOF\n`rm x`\nEOF', ['cat'], []],
  ['x=$(cat <<EOF\n$(rm y)\nEOF\n)', ['cat', 'rm'], []],
  ["echo '$(rm x)' \"\\$(rm y)\"", ['echo'], []],
  ['echo ${x:-`rm y`}', ['echo'], ['unparsable']],
  // Names the shell would compute.
  ['$CMD x', [], ['computed-name']],
  ['${CMD} x', [], ['computed-name']],
  ['"$CMD" x', [], ['computed-name']],
  ['${!name} x', [], ['computed-name', 'changes-lookup']],
  ['a=(rm x); "${a[@]}"', [], ['computed-name']],
  ['r* x', [], ['computed-name']],
  ['/usr/bin/r? x', [], ['computed-name']],
  ['~/bin/rm x', [], ['computed-name']],
  ['$"rm" x', [], ['computed-name']],
  ['`echo rm` x', ['echo'], ['computed-name']],
  ['<(echo rm) x', ['echo'], ['computed-name']],
  ['$((1)) x', [], ['computed-name']],
  ['{rm,x}', [], ['unparsable']],
  ['r{m,} x', [], ['computed-name']],
  ['@(rm) x', [], ['unparsable']],
  // Quotes and escapes name the same program.
  ['\\rm x', ['rm'], []],
  ['"r"m x', ['rm'], []],
  ["r''m x", ['rm'], []],
  ["$'\\x72m' x", ['rm'], []],
  ["$'\\162\\155' x", ['rm'], []],
  ['"rm" "-rf" "."', ['rm'], []],
  // The grammar splits `r\⏎m` in two; the line is refused (and `r` is itself a shell builtin that re-runs commands).
  ['r\\\nm x', ['r'], ['unparsable', 'runs-code']],
  ['rm \\\n  -rf x', ['rm'], []],
  ['"r\\\nm" x', ['rm'], []],
  ["'r*' x", ['r*'], []],
  // Paths.
  ['/bin/rm x', ['/bin/rm'], []],
  ['/usr/local/bin/node --version', ['/usr/local/bin/node'], []],
  ['./rm x', ['./rm'], ['file-by-path']],
  ['./node_modules/.bin/jest', ['./node_modules/.bin/jest'], ['file-by-path']],
  ['/bin/../tmp/rm x', ['/bin/../tmp/rm'], ['file-by-path']],
  ['/workspace/x.sh', ['/workspace/x.sh'], ['file-by-path']],
  // Builtins that run code.
  ['builtin eval "rm x"', ['builtin', 'eval', 'rm'], ['wrapper', 'runs-code']],
  ['command rm x', ['command', 'rm'], ['wrapper']],
  ['command -v rm', ['command'], []],
  ['exec rm x', ['exec', 'rm'], ['wrapper']],
  ['exec >log 2>&1', ['exec'], []],
  ['trap "" INT', ['trap'], []],
  ['trap - INT', ['trap'], []],
  ["trap -- 'rm x' INT", ['trap', 'rm'], ['runs-code']],
  ['fc -s', ['fc'], ['runs-code']],
  ['compgen -C "rm x" y', ['compgen'], ['runs-code']],
  ['mapfile -C f -c 1 a < x', ['mapfile'], ['runs-code']],
  ['coproc rm x', ['coproc', 'rm'], ['wrapper']],
  ['time rm x', ['time', 'rm'], ['wrapper']],
  ['eval $X', ['eval'], ['runs-code']],
  // Things that change what a name runs.
  ['alias ls=rm; ls x', ['alias', 'ls'], ['changes-lookup']],
  ['alias', ['alias'], []],
  ['f() { rm x; }; f', ['rm', 'f'], ['changes-lookup']],
  ['function ls { rm -rf .; }; ls', ['rm', 'ls'], ['changes-lookup']],
  ['command_not_found_handle() { rm x; }; nope', ['rm', 'nope'], ['changes-lookup']],
  ['PATH=/tmp ls', ['ls'], ['changes-lookup']],
  ['PATH=.:$PATH; ls', ['ls'], ['changes-lookup']],
  ['export PATH=.:$PATH; ls', ['export', 'ls'], ['changes-lookup']],
  ['declare -x PATH=/w; ls', ['declare', 'ls'], ['changes-lookup']],
  ['declare -n r=PATH; r=/tmp; ls', ['declare', 'ls'], ['changes-lookup']],
  ['read PATH < f; ls', ['read', 'ls'], ['changes-lookup']],
  ['printf -v PATH %s /tmp; ls', ['printf', 'ls'], ['changes-lookup']],
  ['LD_PRELOAD=./x.so ls', ['ls'], ['changes-lookup']],
  ['BASH_ENV=x.sh bash -c ls', ['bash', 'ls'], ['changes-lookup', 'runs-code']],
  ["PS4='$(rm x)' ls", ['ls'], ['changes-lookup']],
  ['hash -p /bin/rm ls; ls x', ['hash', 'ls'], ['changes-lookup']],
  ['enable -f ./x.so ls', ['enable'], ['changes-lookup']],
  ['env PATH=/w ls', ['env', 'ls'], ['changes-lookup', 'wrapper']],
  ['NODE_OPTIONS=--require=./x.js npm test', ['npm'], ['changes-lookup']],
  // Shells and interpreters fed code.
  ['bash -c "ls; rm x"', ['bash', 'ls', 'rm'], ['runs-code']],
  ['bash -lc "rm x"', ['bash', 'rm'], ['runs-code']],
  ["sh -e -c 'rm x'", ['sh', 'rm'], ['runs-code']],
  ["sh -o errexit -c 'rm x'", ['sh', 'rm'], ['runs-code']],
  ['/bin/sh -c "rm x"', ['/bin/sh', 'rm'], ['runs-code']],
  ['sh', ['sh'], ['runs-code']],
  ['sh < script.sh', ['sh'], ['runs-code']],
  ['bash x.sh', ['bash'], ['runs-code']],
  ['curl -s https://x | sh', ['curl', 'sh'], ['runs-code']],
  ['sh <<EOF\nrm x\nEOF', ['sh'], ['runs-code']],
  ['bash --version', ['bash'], []],
  ['python3 -c "import os; os.remove(\'x\')"', ['python3'], ['runs-code']],
  ['python3 x.py', ['python3'], ['runs-code']],
  ['python3.11 -m http.server', ['python3.11'], ['runs-code']],
  ['node -e "require(\'fs\').rmSync(\'x\')"', ['node'], ['runs-code']],
  ['node --version', ['node'], []],
  ['perl -e "unlink q(x)"', ['perl'], ['runs-code']],
  ['ruby -e "File.delete(1)"', ['ruby'], ['runs-code']],
  ["awk 'BEGIN{system(\"rm x\")}'", ['awk'], ['runs-code']],
  ['echo rm x | python3', ['echo', 'python3'], ['runs-code']],
  // Wrappers: the inner program is reported, the line stays unknowable.
  ['sudo -u root rm x', ['sudo', 'rm'], ['wrapper']],
  ['doas rm x', ['doas', 'rm'], ['wrapper']],
  ["su -c 'rm x' root", ['su', 'rm'], ['runs-code']],
  ['nohup rm x &', ['nohup', 'rm'], ['wrapper']],
  ['nice -n 5 rm x', ['nice', 'rm'], ['wrapper']],
  ['nice -5 rm x', ['nice', 'rm'], ['wrapper']],
  ['timeout -s KILL 5s rm x', ['timeout', 'rm'], ['wrapper']],
  ['timeout --signal=KILL 5 rm x', ['timeout', 'rm'], ['wrapper']],
  ['stdbuf -oL rm x', ['stdbuf', 'rm'], ['wrapper']],
  ['setsid rm x', ['setsid', 'rm'], ['wrapper']],
  ['chroot / rm x', ['chroot', 'rm'], ['wrapper']],
  ['ionice -c 3 rm x', ['ionice', 'rm'], ['wrapper']],
  ['strace -f -o log rm x', ['strace', 'rm'], ['wrapper']],
  ['unbuffer rm x', ['unbuffer', 'rm'], ['wrapper']],
  ['flock /tmp/l rm x', ['flock', 'rm'], ['wrapper']],
  ["flock -c 'rm x' /tmp/l", ['flock', 'rm'], ['runs-code']],
  ['watch -n1 rm x', ['watch', 'rm'], ['runs-code']],
  ['parallel rm ::: a b', ['parallel', 'rm'], ['wrapper']],
  ['env X=1 rm x', ['env', 'rm'], ['wrapper']],
  ['env -i -- rm x', ['env', 'rm'], ['wrapper']],
  ['env --split-string="rm x"', ['env', 'rm'], ['runs-code']],
  ['sudo timeout 5 nice rm x', ['sudo', 'timeout', 'nice', 'rm'], ['wrapper']],
  ['timeout 5 sh -c "rm x"', ['timeout', 'sh', 'rm'], ['wrapper', 'runs-code']],
  ['timeout $T rm x', ['timeout'], ['wrapper', 'computed-name']],
  ['time ! rm x', ['time', 'rm'], ['wrapper']],
  ['! ! rm x', ['!', 'rm'], ['unparsable']],
  ['! { rm x; }', ['{', '}', 'rm'], ['unparsable']],
  ['xargs rm < list', ['xargs', 'rm'], ['wrapper']],
  ['find . | xargs -0 -I{} rm {}', ['find', 'xargs', 'rm'], ['wrapper']],
  ['find . -name "*.tmp" -exec rm {} \\;', ['find', 'rm'], ['wrapper']],
  ['find . -execdir rm {} +', ['find', 'rm'], ['wrapper']],
  ['find . -ok rm {} \\;', ['find', 'rm'], ['wrapper']],
  ['find . -delete', ['find'], ['unseen-effect']],
  ['find . -name x -print', ['find'], []],
  ['npx rimraf x', ['npx', 'rimraf'], ['wrapper']],
  ['npm exec -- rm x', ['npm', 'rm'], ['wrapper']],
  ['busybox rm x', ['busybox', 'rm'], ['multi-call']],
  ['/bin/busybox rm x', ['/bin/busybox', 'rm'], ['multi-call']],
  ['toybox rm x', ['toybox', 'rm'], ['multi-call']],
  // Programs with options that run commands.
  ['git -c core.pager="rm x" log', ['git'], ['runs-code']],
  ['git rebase -x "rm x" HEAD~1', ['git'], ['runs-code']],
  ['git submodule foreach rm x', ['git'], ['runs-code']],
  ['git config core.fsmonitor "rm x"', ['git'], ['runs-code']],
  ['git config --get user.name', ['git'], ['runs-code']],
  ['git status && git log --oneline', ['git'], []],
  ['tar -xf a.tar --to-command=rm', ['tar'], ['runs-code']],
  ['tar -czf a.tgz src', ['tar'], []],
  ['rsync -e "sh -c rm" a b', ['rsync'], ['runs-code']],
  ["sed -n '1e rm x' f", ['sed'], ['runs-code']],
  ["sed 's/a/rm x/e' f", ['sed'], ['runs-code']],
  ['sed -f script.sed f', ['sed'], ['runs-code']],
  ['sed -i s/hello/world/g f', ['sed'], []],
  ['make SHELL=/tmp/x all', ['make'], ['runs-code']],
  // Plain lines with every program named.
  ['ls -la | grep foo && npm test', ['ls', 'grep', 'npm'], []],
  ['npm test -- --watch=false | tee log.txt', ['npm', 'tee'], []],
  ['cat <in.txt >>log 2>&1', ['cat'], []],
  ['echo hi > out.txt', ['echo'], []],
  ['echo "a | rm -rf /" \'; rm x\'', ['echo'], []],
  ['A=1 B=2 /usr/bin/env', ['/usr/bin/env'], []],
  ['export X=1 && npm test', ['export', 'npm'], []],
  ['cd src && make', ['cd', 'make'], []],
  ['true', ['true'], []],
  ['"" x', [''], []],
  ['x=1', [], []],
  ['', [], []],
  ['# only a comment', [], []],
  // Review 2, finding 1: programs that start another program, busybox applets first (the sandbox image is busybox).
  ['linux32 rm victim.txt', ['linux32', 'rm'], ['wrapper']],
  ['linux64 rm victim.txt', ['linux64', 'rm'], ['wrapper']],
  ['cttyhack rm victim.txt', ['cttyhack', 'rm'], ['wrapper']],
  ['nc -f other.txt -e rm victim.txt', ['nc'], ['runs-code']],
  ["printf 'all:\\n\\trm victim.txt\\n' > m && mim -f m all", ['printf', 'mim'], ['wrapper']],
  ['setarch linux32 rm x', ['setarch', 'rm'], ['wrapper']],
  ['run-parts dir', ['run-parts'], ['wrapper']],
  ['chpst -u nobody rm x', ['chpst', 'rm'], ['wrapper']],
  ['envdir d rm x', ['envdir', 'rm'], ['wrapper']],
  ['envuidgid u rm x', ['envuidgid', 'rm'], ['wrapper']],
  ['softlimit -m 100 rm x', ['softlimit', 'rm'], ['wrapper']],
  ['setuidgid u rm x', ['setuidgid', 'rm'], ['wrapper']],
  ['chrt 1 rm x', ['chrt', 'rm'], ['wrapper']],
  ['taskset 1 rm x', ['taskset', 'rm'], ['wrapper']],
  ['start-stop-daemon -S -x /bin/rm -- x', ['start-stop-daemon', '/bin/rm'], ['wrapper']],
  ["script -c 'rm x'", ['script', 'rm'], ['runs-code']],
  ['crond -f -c d', ['crond'], ['wrapper']],
  ['crontab f', ['crontab'], ['wrapper']],
  ['inotifyd ./s.sh .', ['inotifyd'], ['wrapper']],
  ['ifplugd -r ./s.sh', ['ifplugd'], ['wrapper']],
  ['udhcpc -s ./s.sh', ['udhcpc'], ['wrapper']],
  ['tcpsvd 0 8080 rm x', ['tcpsvd', 'rm'], ['wrapper']],
  ['udpsvd 0 53 rm x', ['udpsvd', 'rm'], ['wrapper']],
  ['httpd -f -h .', ['httpd'], ['wrapper']],
  ['switch_root / rm x', ['switch_root', 'rm'], ['wrapper']],
  ['runsv d', ['runsv'], ['wrapper']],
  ['runsvdir d', ['runsvdir'], ['wrapper']],
  ['sv up d', ['sv'], ['wrapper']],
  ['inetd -f conf', ['inetd'], ['wrapper']],
  ['init', ['init'], ['wrapper']],
  ['busybox linux32 rm x', ['busybox', 'linux32', 'rm'], ['multi-call', 'wrapper']],
  ['/bin/linux64 rm x', ['/bin/linux64', 'rm'], ['wrapper']],
  ['LINUX32 rm x', ['LINUX32'], ['wrapper']],
  ['uevent rm x', ['uevent', 'rm'], ['wrapper']],
  ['openvt rm x', ['openvt', 'rm'], ['wrapper']],
  ['run-init / rm x', ['run-init', 'rm'], ['wrapper']],
  ['telnetd -l ./s.sh', ['telnetd'], ['wrapper']],
  ['getty -l ./s.sh 0 tty1', ['getty'], ['wrapper']],
  ['ntpd -S ./s.sh', ['ntpd'], ['wrapper']],
  ['zcip eth0 ./s.sh', ['zcip'], ['wrapper']],
  ['mdev -s', ['mdev'], ['wrapper']],
  ['modprobe x', ['modprobe'], ['wrapper']],
  ["sendmail -H 'rm x'", ['sendmail'], ['wrapper']],
  ["popmaildir -F 'rm x' d", ['popmaildir'], ['wrapper']],
  ['reformime -X rm', ['reformime'], ['wrapper']],
  ['lpd d rm x', ['lpd'], ['wrapper']],
  ['fsck -t x /dev/null', ['fsck'], ['wrapper']],
  ['dpkg -i x.deb', ['dpkg'], ['wrapper']],
  ['ld.so /bin/rm x', ['ld.so', '/bin/rm'], ['wrapper']],
  ['/lib64/ld-linux-x86-64.so.2 /bin/rm x', ['/lib64/ld-linux-x86-64.so.2'], ['file-by-path']],
  ["git fetch --upload-pack='rm x' .", ['git'], ['runs-code']],
  ['git clone x y', ['git'], ['runs-code']],
  ['npm --yes exec rm x', ['npm', 'rm'], ['wrapper']],
  ['npm -y exec -- rm x', ['npm', 'rm'], ['wrapper']],
  ['ip netns exec x rm y', ['ip'], ['runs-code']],
  ['install --strip-program=rm -s a b', ['install'], ['runs-code']],
  ['sdiff --diff-program=rm a b', ['sdiff'], ['runs-code']],
  ['m4 f', ['m4'], ['wrapper']],
  ['dc f', ['dc'], ['wrapper']],
  ['tar xIf sh a.tar', ['tar'], ['runs-code']],
  ['make -f evil.mk', ['make'], ['runs-code']],
  ["hush -c 'rm x'", ['hush', 'rm'], ['runs-code']],
  ['ssl_client -s 3', ['ssl_client'], []],
  ['uname -m', ['uname'], []],
  ['ls -la', ['ls'], []],
  // Review 2, findings 2 and 3: every way to write a lookup variable, and no shortcut that trusts where an argument stands.
  ["printf '#!/bin/rm\\n' > lint && chmod +x lint && for PATH in .; do lint victim.txt; done", ['printf', 'chmod', 'lint'], ['changes-lookup']],
  ["mkdir 0 && printf '#!/bin/rm\\n' > 0/lint && chmod +x 0/lint && : $((PATH=0)) && lint victim.txt", ['mkdir', 'printf', 'chmod', ':', 'lint'], ['changes-lookup']],
  ["export 'PATH=.' && lint victim.txt", ['export', 'lint'], ['changes-lookup']],
  ['x=PATH; export $x=.', ['export'], ['changes-lookup']],
  ['select PATH in .; do lint; done', ['lint'], ['changes-lookup']],
  ['((PATH=0)); lint', ['lint'], ['changes-lookup']],
  ['let PATH=0', ['let'], ['changes-lookup']],
  ['let "PATH=0"', ['let'], ['changes-lookup']],
  ['echo $[PATH=0]', ['echo'], ['changes-lookup']],
  ['for ((PATH=0; ;)); do lint; done', ['lint'], ['changes-lookup']],
  ['a[PATH=0]=1', [], ['changes-lookup']],
  ['echo ${a[PATH=0]}', ['echo'], ['changes-lookup']],
  ['[[ PATH=0 -eq 0 ]]', [], ['changes-lookup']],
  ['x=PATH=0; : $((x)); lint', [':', 'lint'], ['changes-lookup']],
  ['x=PATH=0; [[ $x -eq 0 ]]', [], ['changes-lookup']],
  ['x=PATH=0; [[ x -lt 1 ]]', [], ['changes-lookup']],
  ['read PATH', ['read'], ['changes-lookup']],
  ['read -r PATH < f', ['read'], ['changes-lookup']],
  ['read -aPATH < f', ['read'], ['changes-lookup']],
  ['read -a PATH < f', ['read'], ['changes-lookup']],
  ['printf -v PATH .', ['printf'], ['changes-lookup']],
  ['printf -vPATH .', ['printf'], ['changes-lookup']],
  ['getopts a PATH', ['getopts'], ['changes-lookup']],
  ['mapfile PATH < f', ['mapfile'], ['changes-lookup']],
  ['readarray -t PATH < f', ['readarray'], ['changes-lookup']],
  ['wait -p PATH', ['wait'], ['changes-lookup']],
  ['echo ${PATH:=.}', ['echo'], ['changes-lookup']],
  [': ${PATH=.}', [':'], ['changes-lookup']],
  ['exec {PATH}>/dev/null', ['exec', '{PATH}'], ['changes-lookup', 'wrapper']],
  ['{ lint; } {PATH}>/dev/null', [], ['unparsable']],
  ['declare "$x=."', ['declare'], ['changes-lookup']],
  ["declare -x 'PATH=.'", ['declare'], ['changes-lookup']],
  ['typeset PATH=.', ['typeset'], ['changes-lookup']],
  ['readonly "PATH=."', ['readonly'], ['changes-lookup']],
  ['export "PATH"=.', ['export'], ['changes-lookup']],
  ['export PATH', ['export'], ['changes-lookup']],
  ['declare -i n; n=PATH=0', ['declare'], ['changes-lookup']],
  ['local -ia n', ['local'], ['changes-lookup']],
  ['unset "$x"', ['unset'], ['changes-lookup']],
  ["test -v 'a[PATH=0]'", ['test'], ['changes-lookup']],
  ['[ -v "$v" ]', [], ['changes-lookup']],
  ['[[ -v a[PATH=0] ]]', [], ['changes-lookup']],
  ["b='a[PATH=0]'; echo ${!b}", ['echo'], ['changes-lookup']],
  ["x='$(rm y)'; echo ${x@P}", ['echo'], ['runs-code']],
  ['BASH_CMDS[lint]=./lint; lint', ['lint'], ['changes-lookup']],
  ['read -p "x" "$v"', ['read'], ['changes-lookup']],
  ['printf -v "$x" .', ['printf'], ['changes-lookup']],
  [': $(( $(echo PATH=0) ))', ['echo', ':'], ['changes-lookup']],
  ['set -- PATH=0; : $(($1))', ['set', ':'], ['changes-lookup']],
  ['echo PATH=0; : $((_))', ['echo', ':'], ['changes-lookup']],
  ['[[ PATH=0 =~ (.*) ]]; : $((BASH_REMATCH[1]))', [':'], ['changes-lookup']],
  ['read x; : $((x))', ['read', ':'], ['changes-lookup']],
  ['for x in PATH=0; do : $((x)); done', [':'], ['changes-lookup']],
  ['echo ${x:PATH}', ['echo'], ['changes-lookup']],
  ['x=abc; echo ${x:i:n}', ['echo'], []],
  ['for i in 1 2; do echo $i; done', ['echo'], []],
  ['for ((i=0; i<3; i++)); do echo $i; done', ['echo'], []],
  ['n=3; echo $((n*2))', ['echo'], []],
  ['echo $((1+2)) $((16#ff + 0x1f))', ['echo'], []],
  ['x=$((x+1))', [], []],
  ['read line < f', ['read'], []],
  ["printf '%s\\n' x", ['printf'], []],
  ['echo ${#x} ${x:-d} ${x:1:2} ${x#a} ${x/a/b}', ['echo'], []],
  ['echo $((RANDOM % 6))', ['echo'], []],
  ['i=0; while [ $i -lt 3 ]; do i=$((i+1)); done', [], []],
  ['command rm -v victim.txt', ['command', 'rm'], ['wrapper']],
  ['command -v rm', ['command'], []],
  ['command -pv rm', ['command'], []],
  ['command -p rm x', ['command', 'rm'], ['wrapper']],
  ['command -V rm', ['command'], []],
  ["echo 'rm x' | sh -v", ['echo', 'sh'], ['runs-code']],
  ['sh -h', ['sh'], ['runs-code']],
  ['python3 -v', ['python3'], ['runs-code']],
  ['node -v', ['node'], ['runs-code']],
  ['ed -v f', ['ed'], ['runs-code']],
  ['vim -V', ['vim'], ['runs-code']],
  ['bash --version', ['bash'], []],
  ['fc -l -s', ['fc'], ['runs-code']],
  ['fc -s -l', ['fc'], ['runs-code']],
  ['fc -ln -5', ['fc'], []],
  ['sed -nes/x/rm\\ victim.txt/e f', ['sed'], ['runs-code']],
  ['sed -n -e p -es/a/b/e f', ['sed'], ['runs-code']],
  ["sed --expr='1e rm x' f", ['sed'], ['runs-code']],
  ['sed -i.bak s/a/b/ f', ['sed'], []],
  ['sed -i -e s/a/b/ f', ['sed'], []],
  ["sed -E 's/a/b/' f", ['sed'], []],
  ["sed -ni 's/a/b/e' f", ['sed'], ['runs-code']],
  ['sed -n "$s" f', ['sed'], ['runs-code']],
  ['find . "$x"', ['find'], ['runs-code']],
  ['trap -p', ['trap'], []],
  ['exec -a x', ['exec'], []],
  ['[ -v "$v" ]', [], ['changes-lookup']],
  ['[[ -v a[$i] ]]', [], ['changes-lookup']],
  ['[[ -v x ]]', [], []],
  ['[ -v PATH ]', [], []],
  ['[[ -n $x ]]', [], []],
  // Attacking the fix: long options cut short, other spellings of a write, nested and wrapped forms.
  ["sed --e='1e rm x' f", ['sed'], ['runs-code']],
  ['tar -xf a.tar --to-com=rm', ['tar'], ['runs-code']],
  ['tar --use-compress-prog=sh -xf a', ['tar'], ['runs-code']],
  ['sort --compress-p=sh f', ['sort'], ['runs-code']],
  ["git fetch --upload-p='rm x' .", ['git'], ['runs-code']],
  ['npm test --script-sh=/tmp/x', ['npm'], ['runs-code']],
  ['export {PATH,X}=.', ['export'], ['changes-lookup']],
  ['export P\\ATH=.', ['export'], ['changes-lookup']],
  ['declare PATH[0]=.', ['declare'], ['changes-lookup']],
  ['cat <<EOF\n${PATH:=.} $((PATH=0))\nEOF', ['cat'], ['changes-lookup']],
  ['coproc PATH { ls; }', ['coproc', 'PATH', '}'], ['wrapper', 'unparsable']],
  ['x=PATH=0; y=$x; : $((y))', [':'], ['changes-lookup']],
  ["printf -v x 'PATH=0'; : $((x))", ['printf', ':'], ['changes-lookup']],
  ['for x; do : $((x)); done', [':'], ['changes-lookup']],
  [': $((${#arr[@]}))', [':'], ['changes-lookup']],
  ['echo ${arr[@]@P}', ['echo'], ['runs-code']],
  ['read -ar PATH', ['read'], ['changes-lookup']],
  ['wait -fp PATH', ['wait'], ['changes-lookup']],
  ['echo "${x:-${PATH:=.}}"', ['echo'], ['changes-lookup']],
  ['[[ $(( PATH = 1 )) ]]', [], ['changes-lookup']],
  ['case $((PATH=0)) in *) lint;; esac', ['lint'], ['changes-lookup']],
  ["busybox sh -c 'PATH=. lint'", ['busybox', 'sh', 'lint'], ['multi-call', 'runs-code', 'changes-lookup']],
  ['busybox env PATH=. lint', ['busybox', 'env', 'lint'], ['multi-call', 'changes-lookup', 'wrapper']],
  ['nice -n 5 linux32 rm x', ['nice', 'linux32', 'rm'], ['wrapper']],
  ['ls --color=auto', ['ls'], []],
  ['git status --short', ['git'], []],
  ['npm test -- --watch=false', ['npm'], []],
  ['tar -czf a.tgz src', ['tar'], []],
  ['for path in a b; do echo $path; done', ['echo'], []],
  ['npm_config_script_shell=/x npm test', ['npm'], ['changes-lookup']],
  ['NPM_CONFIG_SCRIPT_SHELL=/x npm test', ['npm'], ['changes-lookup']],
  ['Path=. lint', ['lint'], []],
  // Lines the parser cannot read fail closed.
  ["echo 'x", [], ['unparsable']],
  ['echo "x', [], ['unparsable']],
  ['echo $(rm x', [], ['unparsable']],
  ['if true; then rm x', [], ['unparsable']],
  ['rm x; fi', ['rm', 'fi'], ['unparsable']],
  ['cat <<EOF; rm x\nbody\nEOF', [], ['unparsable']],
];

describe('analyseCommandLine: the table', () => {
  it('holds more than a hundred lines', () => {
    expect(CASES.length).toBeGreaterThan(100);
  });

  it.each(CASES)('%j', (line, programs, kinds) => {
    const analysis = analyseCommandLine(line);
    expect(new Set(analysis.programs)).toEqual(new Set(programs));
    expect(new Set(analysis.unknowable.map((entry) => entry.kind))).toEqual(new Set(kinds));
    for (const entry of analysis.unknowable) expect(entry.reason.length).toBeGreaterThan(10);
  });
});

/**
 * Every way a line can write a variable that changes which program a name runs, for several such
 * variables: each must count as "could run any program", however the write is spelled.
 */
describe('writes to lookup variables, by any means', () => {
  const FORMS = [
    'for NAME in .; do lint; done',
    'select NAME in .; do lint; done',
    ': $((NAME=0)); lint',
    ': $[NAME=0]; lint',
    '((NAME=0)); lint',
    '((NAME+=1)); lint',
    '((NAME++)); lint',
    'for ((NAME=0; ;)); do lint; done',
    'let NAME=0; lint',
    'let "NAME = 0"; lint',
    'a[NAME=0]=1; lint',
    'echo ${a[NAME=0]}; lint',
    '[[ NAME=0 -eq 0 ]]; lint',
    '[[ -v a[NAME=0] ]]; lint',
    'test -v "a[NAME=0]"; lint',
    'x=NAME=0; : $((x)); lint',
    'x=NAME=0; [[ $x -eq 0 ]]; lint',
    'export NAME=.; lint',
    "export 'NAME=.'; lint",
    'export "NAME"=.; lint',
    'export NAME+=:.; lint',
    'declare NAME=.; lint',
    'declare -gx NAME=.; lint',
    'typeset NAME=.; lint',
    'readonly NAME=.; lint',
    'f() { local NAME=.; lint; }; f',
    'declare -n r=NAME; r=.; lint',
    'read NAME < f; lint',
    'read -r -d "" NAME < f; lint',
    'read -a NAME < f; lint',
    'read -raNAME < f; lint',
    'printf -v NAME .; lint',
    'printf -vNAME .; lint',
    'getopts a NAME; lint',
    'mapfile NAME < f; lint',
    'readarray -t NAME < f; lint',
    'wait -p NAME; lint',
    ': ${NAME:=.}; lint',
    ': ${NAME=.}; lint',
    'echo "${NAME:=.}"; lint',
    'exec {NAME}>/dev/null; lint',
    'NAME=. lint',
    'NAME=.; lint',
    'env NAME=. lint',
    'unset NAME; lint',
    'unset -v NAME; lint',
  ];
  const NAMES = ['PATH', 'LD_PRELOAD', 'BASH_ENV', 'GIT_EXEC_PATH', 'BASH_CMDS'];
  const cases = FORMS.flatMap((form) => NAMES.map((name) => form.replaceAll('NAME', name)));

  it.each(cases)('%s', (line) => {
    const analysis = analyseCommandLine(line);
    expect(analysis.unknowable.map((entry) => entry.kind), line).toContain('changes-lookup');
    expect(checkCommandPrograms(line, { allow: ['lint', 'echo', 'printf', 'read', 'f'], deny: [] }).allowed, line).toBe(false);
  });

  it.each([
    'export $x=.; lint',
    'export "$x=."; lint',
    'declare "$x=."; lint',
    'declare -x "$x"=.; lint',
    'local "$x"; lint',
    'readonly ${x}=.; lint',
    'read "$x" < f; lint',
    'read -a "$x" < f; lint',
    'read $opts x < f; lint',
    'printf -v "$x" .; lint',
    'printf $o .; lint',
    'getopts a "$x"; lint',
    'mapfile "$x" < f; lint',
    'wait -p "$x"; lint',
    'unset "$x"; lint',
    'let "$e"; lint',
    'e="PATH=0"; : $(($e)); lint',
    ': $(( $(cat f) )); lint',
    ': $((${x:-PATH=0})); lint',
    'set -- PATH=0; : $(($1)); lint',
    'echo PATH=0; : $((_)); lint',
    'read; : $((REPLY)); lint',
    '[[ PATH=0 =~ (.*) ]]; : $((BASH_REMATCH[1])); lint',
    'for x in PATH=0; do : $((x)); done; lint',
    'read x < f; : $((x + 1)); lint',
    'x=PATH=0; echo ${y:x}; lint',
    'declare -i n; n=PATH=0; lint',
    'typeset -i n; lint',
    'b="a[PATH=0]"; echo ${!b}; lint',
    '[ -v "$v" ]; lint',
  ])('a write whose variable the analysis cannot name: %s', (line) => {
    expect(analyseCommandLine(line).unknowable.map((entry) => entry.kind), line).toContain('changes-lookup');
  });

  it('counts the variables a step sets as text the command chose, for arithmetic too', () => {
    expect(analyseCommandLine(': $((X)); lint', ['X']).unknowable.map((entry) => entry.kind)).toContain('changes-lookup');
    expect(analyseCommandLine(': $((X)); lint').unknowable).toEqual([]);
    expect(checkCommandPrograms(': $((X)); lint', { allow: ['lint', ':'], deny: [] }, { X: 'PATH=0' }).allowed).toBe(false);
  });

  it.each([
    'for i in 1 2; do echo $i; done',
    'for ((i = 0; i < 3; i++)); do echo $i; done',
    'n=3; echo $((n * 2))',
    'i=0; while [ $i -lt 3 ]; do i=$((i + 1)); done',
    'echo $((16#ff + 0x1f + 2#101)) $((RANDOM % 6)) $(($# + $?))',
    'echo ${#x} ${x:-d} ${x:1:2} ${x#a} ${x/a/b} ${!arr[@]}',
    'read -r line < f',
    'printf "%s\\n" "$x"',
    'export X=1 Y=two',
    'declare -a list=(a b)',
    '[[ -v x ]] && [ -v PATH ]',
    'ls 2>/dev/null',
  ])('leaves alone a line that writes no lookup variable: %s', (line) => {
    expect(analyseCommandLine(line).unknowable).toEqual([]);
  });
});

describe('programs the rule-prefix table knows can run another one', () => {
  it('are never taken for programs that run only themselves, under any of their names', () => {
    for (const line of ['linux32 rm x', 'LINUX64 rm x', '/usr/bin/setarch x86_64 rm x', 'i386 rm x', 'x86_64 rm x', 'busybox cttyhack rm x', 'nc -lp 1 -e rm x', 'nc -e rm x', 'netcat -c "rm x"', 'mim -f m all', 'run-parts d', 'git -C . fetch --upload-pack="rm x" .', 'ip netns exec n rm x', 'npm --prefix x exec rm y', 'npm -y exec rm y', 'yarn --cwd x dlx rm', 'cargo +nightly run', 'go run x.go']) {
      const verdict = checkCommandPrograms(line, { allow: ['ls', 'cat', 'nc', 'netcat', 'linux32', 'linux64', 'setarch', 'i386', 'x86_64', 'busybox', 'cttyhack', 'mim', 'run-parts', 'git', 'ip', 'npm', 'yarn', 'cargo', 'go'], deny: [] });
      expect(verdict.allowed, line).toBe(false);
      expect(analyseCommandLine(line).unknowable.length, line).toBeGreaterThan(0);
    }
  });

  it('read a program given a word they cannot read as the worst it could be', () => {
    expect(analyseCommandLine('nc "$opt" rm x').unknowable.map((entry) => entry.reason).join(' ')).toContain('cannot read');
    expect(analyseCommandLine('git "$sub" x').unknowable.length).toBeGreaterThan(0);
    expect(analyseCommandLine('nc localhost 80').unknowable).toEqual([]);
  });
});

describe('analyseArgv', () => {
  const argvCases: [argv: string[], programs: string[], kinds: UnknowableKind[]][] = [
    [['rm', '-rf', '.'], ['rm'], []],
    [['/bin/rm', 'x'], ['/bin/rm'], []],
    [['echo', 'a | rm -rf /', '$(rm x)'], ['echo'], []],
    [['sh', '-c', 'rm x'], ['sh', 'rm'], ['runs-code']],
    [['/bin/sh', '-c', '--', 'ls; rm x'], ['/bin/sh', 'ls', 'rm'], ['runs-code']],
    [['bash', '-lc', 'python3 x.py | nc host 1'], ['bash', 'python3', 'nc'], ['runs-code']],
    [['timeout', '60', 'rm', '-rf', '.'], ['timeout', 'rm'], ['wrapper']],
    [['env', '-S', 'rm x'], ['env', 'rm'], ['runs-code']],
    [['busybox', 'rm', 'x'], ['busybox', 'rm'], ['multi-call']],
    [['xargs', '-0', 'rm'], ['xargs', 'rm'], ['wrapper']],
    [['python3', '-c', 'print(1)'], ['python3'], ['runs-code']],
    [['./run.sh'], ['./run.sh'], ['file-by-path']],
    [['$X', 'x'], ['$X'], []],
    [['npm', 'test'], ['npm'], []],
    [['linux32', 'uname', '-m'], ['linux32', 'uname'], ['wrapper']],
    [['linux32', 'rm', '-r', 'victim.txt'], ['linux32', 'rm'], ['wrapper']],
    [['command', 'rm', '-v', 'victim.txt'], ['command', 'rm'], ['wrapper']],
    [['command', '-v', 'rm'], ['command'], []],
    [['sh', '-v'], ['sh'], ['runs-code']],
    [['nc', '-f', 'other.txt', '-e', 'rm', 'victim.txt'], ['nc'], ['runs-code']],
  ];
  it.each(argvCases)('%j', (argv, programs, kinds) => {
    const analysis = analyseArgv(argv);
    expect(new Set(analysis.programs)).toEqual(new Set(programs));
    expect(new Set(analysis.unknowable.map((entry) => entry.kind))).toEqual(new Set(kinds));
  });
});

/** Pieces of shell syntax, glued at random: the walk must never throw and never let an unnamed program through. */
const shellish = fc
  .array(
    fc.constantFrom(
      'rm', 'ls', 'x', ' ', ' ', ';', '|', '||', '&&', '&', '\n', '$(', ')', '(', '`', '"', "'", '\\', '{', '}', '<', '>', '<<', '<<<', 'EOF', '$',
      'X', '=', '*', '?', '[', ']', 'sh', '-c', 'eval', 'if', 'then', 'fi', 'do', 'done', 'while', '#', '~', ',', 'timeout', '5', '${', 'IFS', '$\'', '\\x72',
      'exec', 'env', '-S', 'f()', 'alias', 'PATH=', '.', 'source', 'trap', '<(', '>(', 'case', 'in', 'esac', ';;', '!', 'for', '((', '))', 'busybox', 'xargs',
      'linux32', 'command', '-v', 'PATH', '$((', 'read', 'export', 'printf', 'nc', '-e', 'sed', '@P',
    ),
    { maxLength: 30 },
  )
  .map((parts) => parts.join(''));

describe('analysis of random shell-ish input', () => {
  it('never throws, and with a deny list never allows a line it cannot fully name, nor one that names a denied program', () => {
    fc.assert(
      fc.property(shellish, (line) => {
        const verdict = checkCommandPrograms(line, { allow: [], deny: ['rm'] });
        if (verdict.allowed) {
          expect(verdict.programs.map((program) => program.slice(program.lastIndexOf('/') + 1))).not.toContain('rm');
        }
        const allowList = checkCommandPrograms(line, { allow: ['ls', 'x'], deny: [] });
        if (allowList.allowed) {
          expect(allowList.unknowable).toEqual([]);
          for (const program of allowList.programs) expect(['ls', 'x']).toContain(program);
        }
      }),
      { numRuns: 3000 },
    );
  });

  /** Builds lines whose programs are known by construction, through every kind of nesting. */
  const program = fc.constantFrom('rm', 'cp', 'mv', 'ls', 'cat');
  const simple = fc.tuple(program, fc.constantFrom('', ' x', ' -rf .', ' "a b"', " 'c'")).map(([name, args]) => ({ line: `${name}${args}`, programs: [name] }));
  type Built = { line: string; programs: string[] };
  const built: fc.Arbitrary<Built> = fc.letrec<{ cmd: Built }>((tie) => ({
    cmd: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      simple,
      fc.tuple(tie('cmd'), tie('cmd'), fc.constantFrom('; ', ' && ', ' || ', ' | ', ' & ', '\n')).map(([a, b, op]) => ({ line: `${a.line}${op}${b.line}`, programs: [...a.programs, ...b.programs] })),
      tie('cmd').map((a) => ({ line: `{ ${a.line}; }`, programs: a.programs })),
      tie('cmd').map((a) => ({ line: `( ${a.line} )`, programs: a.programs })),
      tie('cmd').map((a) => ({ line: `if true; then ${a.line}; fi`, programs: ['true', ...a.programs] })),
      tie('cmd').map((a) => ({ line: `while false; do ${a.line}; done`, programs: ['false', ...a.programs] })),
      tie('cmd').map((a) => ({ line: `echo "$( ${a.line} )"`, programs: ['echo', ...a.programs] })),
      tie('cmd').map((a) => ({ line: `cat <( ${a.line} )`, programs: ['cat', ...a.programs] })),
      tie('cmd').map((a) => ({ line: `! ${a.line}`, programs: a.programs })),
      tie('cmd').map((a) => ({ line: `X=$( ${a.line} ) true`, programs: ['true', ...a.programs] })),
      tie('cmd').map((a) => ({ line: `case y in y) ${a.line};; esac`, programs: a.programs })),
    ),
  })).cmd;

  it('finds every program of a line built from nested constructs, or says it cannot', () => {
    fc.assert(
      fc.property(built, ({ line, programs }) => {
        const analysis = analyseCommandLine(line);
        if (analysis.unknowable.length > 0) return;
        for (const name of programs) expect(analysis.programs).toContain(name);
      }),
      { numRuns: 500 },
    );
  });
});
