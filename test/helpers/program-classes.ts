/**
 * Every busybox applet (upstream busybox 1.36 and the Debian build the sandbox image is made from),
 * and the ones judged to run only themselves, with the reason. Every other applet must be in one of
 * the tables of programs that run other programs (src/domain/program-runners.ts, src/policy/program-kinds.ts):
 * test/unit/domain/program-lists-agree.test.ts checks that each applet is classified one way or the
 * other, and test/integration/cli/command-policy.test.ts checks that every applet and program the
 * real sandbox image has is in this list.
 */

export const BUSYBOX_APPLETS: readonly string[] = `
[ [[ acpid add-shell addgroup adduser adjtimex ar arch arp arping ascii ash awk base32 base64 basename bash bbconfig bc beep blkdiscard
blkid blockdev bootchartd brctl bunzip2 busybox bzcat bzip2 cal cat chat chattr chgrp chmod chown chpasswd chpst chroot chrt chvt
cksum clear cmp comm conspy cp cpio crc32 crond crontab cryptpw cttyhack cut date dc dd deallocvt delgroup deluser depmod devmem df
dhcprelay diff dirname dmesg dnsd dnsdomainname dos2unix dpkg dpkg-deb du dumpkmap dumpleases echo ed egrep eject env envdir
envuidgid ether-wake expand expr factor fakeidentd fallocate false fatattr fbset fbsplash fdflush fdformat fdisk fgconsole fgrep
find findfs flash_eraseall flash_lock flash_unlock flashcp flock fold free freeramdisk fsck fsck.minix fsfreeze fstrim fsync ftpd
ftpget ftpput fuser getfattr getopt getty grep groups gunzip gzip halt hd hdparm head hexdump hexedit hostid hostname httpd hush
hwclock i2cdetect i2cdump i2cget i2cset i2ctransfer id ifconfig ifdown ifenslave ifplugd ifup inetd init insmod install ionice
iostat ip ipaddr ipcalc ipcrm ipcs iplink ipneigh iproute iprule iptunnel kbd_mode kill killall killall5 klogd last less link
linux32 linux64 linuxrc ln loadfont loadkmap logger login logname logread losetup lpd lpq lpr ls lsattr lsmod lsof lspci lsscsi
lsusb lzcat lzma lzop lzopcat makedevs makemime man md5sum mdev mesg microcom mim mkdir mkdosfs mke2fs mkfifo mkfs.ext2
mkfs.minix mkfs.vfat mknod mkpasswd mkswap mktemp modinfo modprobe more mount mountpoint mpstat msh mt mv nameif nanddump
nandwrite nbd-client nc netcat netstat nice nl nmeter nohup nologin nproc nsenter nslookup ntpd nuke od openvt partprobe passwd
paste patch pgrep pidof ping ping6 pipe_progress pivot_root pkill pmap popmaildir poweroff powertop printenv printf ps pscan pstree
pwd pwdx raidautorun rdate rdev readahead readlink readprofile realpath reboot reformime remove-shell renice reset resize resume
rev rm rmdir rmmod route rpm rpm2cpio rtcwake run-init run-parts runlevel runsv runsvdir rx script scriptreplay sed seedrng sendmail
seq setarch setconsole setfattr setfont setkeycodes setlogcons setpriv setserial setsid setuidgid sh sha1sum sha256sum sha3sum
sha512sum showkey shred shuf slattach sleep smemcap softlimit sort split ssl_client start-stop-daemon stat strings stty su sulogin
sum sv svc svlogd svok swapoff swapon switch_root sync sysctl syslogd tac tail tar taskset tc tcpsvd tee telnet telnetd test tftp
tftpd time timeout top touch tr traceroute traceroute6 tree true truncate ts tsort tty ttysize tunctl tune2fs ubiattach ubidetach
ubimkvol ubirename ubirmvol ubirsvol ubiupdatevol udhcpc udhcpc6 udhcpd udpsvd uevent umount uname uncompress unexpand uniq
unix2dos unlink unlzma unlzop unshare unxz unzip uptime users usleep uudecode uuencode vconfig vi vlock volname w wall watch
watchdog wc wget which who whoami whois xargs xxd xz xzcat yes zcat zcip
`
  .split(/\s+/)
  .filter(Boolean);

/** The image's programs besides busybox (the offline image copies these from the host). */
export const IMAGE_PROGRAMS: readonly string[] = ['node', 'npm', 'npx', 'git', 'python', 'python3', 'python3.11'];

function names(why: string, list: string): [string, string][] {
  return list
    .split(/\s+/)
    .filter(Boolean)
    .map((name) => [name, why]);
}

/**
 * Applets that start no program of the line's choosing. Some reach far (mount, fdisk, kill), but
 * what they do is their own; the effect gate on the changeset (src/policy/command-effects.ts) is
 * what limits what they change. `ftpget` runs the `ssl_client` helper by name through
 * PATH, which a write to PATH would have to change first (and that is flagged).
 */
export const RUNS_ONLY_ITSELF: ReadonlyMap<string, string> = new Map([
  ...names(
    'tests, prints or computes',
    `[ [[ arch ascii base32 base64 basename bc cal cat cksum clear cmp comm crc32 cut date dirname
    dnsdomainname echo expand expr factor false fgconsole fold free getopt groups hd head hexdump hostid hostname id ipcalc ipcs last
    logname lsattr lsmod lsof lspci lsscsi lsusb md5sum mesg mountpoint mpstat nl nproc od paste pgrep pidof pmap printenv printf
    ps pscan pstree pwd pwdx readlink realpath rev runlevel seq sha1sum sha256sum sha3sum sha512sum showkey shuf sleep smemcap stat
    strings sum tac tail tee test tree true tsort tty ttysize uname unexpand uniq uptime users usleep w wc which who whoami xxd yes
    getfattr iostat nmeter top fuser volname logread dumpleases findfs blkid modinfo ls scriptreplay`,
  ),
  ...names(
    'changes files, links, owners or attributes it is given',
    `chattr chgrp chmod chown cp dd fallocate fatattr link ln mkdir
    mkfifo mknod mktemp mv nuke rm rmdir setfattr shred sync fsync touch truncate unlink dos2unix unix2dos patch`,
  ),
  ...names(
    'compresses, archives or converts data',
    `ar bunzip2 bzcat bzip2 dpkg-deb gunzip gzip lzcat lzma lzop lzopcat rpm rpm2cpio
    uncompress unlzma unlzop unxz unzip uudecode uuencode xz xzcat zcat makemime`,
  ),
  ...names('searches or filters text', 'diff egrep fgrep grep tr tsort less more hexedit'),
  ...names(
    'talks to the network or a serial line',
    `arp arping brctl ether-wake ftpget ftpput ifconfig ifenslave ipaddr iplink ipneigh
    iproute iprule iptunnel microcom nameif nbd-client netstat nslookup ping ping6 rdate route slattach ssl_client tc telnet tftp tftpd
    traceroute traceroute6 tunctl vconfig whois dnsd fakeidentd ftpd dhcprelay rx`,
  ),
  ...names(
    'manages disks, devices, the kernel or the console',
    `blkdiscard blockdev chvt deallocvt depmod devmem df dmesg du dumpkmap
    eject fbset fbsplash fdflush fdformat fdisk flash_eraseall flash_lock flash_unlock flashcp freeramdisk fsck.minix fsfreeze fstrim
    halt hdparm hwclock i2cdetect i2cdump i2cget i2cset i2ctransfer insmod kbd_mode loadfont loadkmap losetup makedevs mkdosfs
    mke2fs mkfs.ext2 mkfs.minix mkfs.vfat mkswap nanddump nandwrite partprobe pivot_root poweroff powertop raidautorun rdev readahead
    readprofile reboot resize reset resume rmmod rtcwake setconsole setfont setkeycodes setlogcons setserial stty swapoff swapon
    sysctl tune2fs ubiattach ubidetach ubimkvol ubirename ubirmvol ubirsvol ubiupdatevol umount watchdog adjtimex klogd syslogd
    logger seedrng beep conspy vlock wall`,
  ),
  ...names(
    'manages users, passwords or processes it is given',
    `add-shell remove-shell addgroup delgroup deluser chpasswd cryptpw
    mkpasswd passwd nologin kill killall killall5 pkill ipcrm mt renice pipe_progress ts lpq lpr chat bbconfig svok`,
  ),
]);
