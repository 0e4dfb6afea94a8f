/* benchlang-launch: run one trial's command and measure it alone.
 *
 * Usage: benchlang-launch [-t SECONDS] [-C DIR] [-g CGROUP_DIR_FD] [-R|-A] -- COMMAND ARGS...
 *
 * -R runs the command with address-space randomisation off (personality(2)
 * ADDR_NO_RANDOMIZE, as setarch -R), -A with it on; set in the child only, before exec.
 *
 * benchlang (a ~100 MiB Python process) cannot spawn the command itself and keep max_rss right:
 * at exec, Linux folds the old address space's peak RSS into the new program's
 * signal->maxrss (fs/exec.c, exec_mmap -> setmax_mm_hiwater_rss), so a child
 * spawned from Python reports Python's resident size as its floor. This launcher is small (its
 * resident size is ~1 MiB, like GNU time's), forks the command, waits for it with wait4 and
 * writes the command's own rusage (man 2 wait4, man 2 getrusage) as one line on fd 3.
 *
 * It also owns the trial's isolation:
 *  - the command gets its own process group (setpgid in child and parent, no race);
 *  - with -g, the command is created inside the trial's cgroup v2 (clone3 CLONE_INTO_CGROUP,
 *    Linux >= 5.7; else it writes itself into cgroup.procs before exec), so setsid cannot escape;
 *  - the launcher is a child subreaper (man 2 prctl, PR_SET_CHILD_SUBREAPER): every orphaned
 *    descendant, setsid or not, is re-parented to it.
 * After the command exits (or on timeout, or SIGTERM from benchlang) everything left is killed:
 * the process group, the cgroup (freeze + kill each pid + thaw, Linux >= 5.2), and
 * every descendant, which it reaps until wait4 says ECHILD. Only then does it report.
 *
 * Output line (fd 3): "benchlang-launch 1 STATUS WALL_NS UTIME_US STIME_US MAXRSS_KIB MINFLT
 * MAJFLT NVCSW NIVCSW TIMED_OUT CANCELLED LEFT\n"; STATUS is the exit code or minus the signal;
 * LEFT counts processes killed after the command exited. A command that cannot be started
 * gets a message on its stderr and exits 127, as a shell would.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef PR_SET_CHILD_SUBREAPER
#define PR_SET_CHILD_SUBREAPER 36
#endif

struct clone_args_v2 {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    uint64_t set_tid, set_tid_size, cgroup;
};

static int cgroup_fd = -1;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int write_at(int dirfd, const char *name, const char *text) {
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n < 0 ? -1 : 0;
}

/* Whether the cgroup still holds a live process ("populated 1" in cgroup.events). */
static int cgroup_populated(void) {
    char buf[256];
    int fd = openat(cgroup_fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strstr(buf, "populated ");
    return p && p[10] == '1';
}

/* SIGKILL every process of the cgroup: freeze it (no process can fork while frozen, and a
 * child forked while it freezes is frozen too), kill each pid in cgroup.procs, thaw, until it
 * is empty (Documentation/admin-guide/cgroup-v2.rst, "cgroup.freeze"; a frozen task still
 * dies of SIGKILL). Not cgroup.kill: on Linux 6.x a cgroup once killed through it makes every
 * later clone3(CLONE_INTO_CGROUP) child in it die of SIGKILL at birth (its kill_seq is
 * compared with the parent's cgroup's), and the session reuses its cgroup trial after trial. */
static int kill_cgroup(void) {
    int killed = 0;
    if (cgroup_fd < 0 || !cgroup_populated()) return 0;
    write_at(cgroup_fd, "cgroup.freeze", "1");
    for (int round = 0; round < 1000 && cgroup_populated(); round++) {
        int fd = openat(cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        FILE *f = fdopen(fd, "r");
        long pid;
        while (f && fscanf(f, "%ld", &pid) == 1) {
            if (kill((pid_t)pid, SIGKILL) == 0) killed++;
        }
        if (f) fclose(f);
        /* Reap what died here (our children), so that it leaves the cgroup. */
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        if (cgroup_populated()) usleep(200);
    }
    write_at(cgroup_fd, "cgroup.freeze", "0");
    return killed;
}

/* SIGKILL every direct child (orphans re-parented to this subreaper included). */
static int kill_children(void) {
    char path[64], buf[4096];
    int killed = 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n >= 0) {
            buf[n] = 0;
            for (char *p = buf; *p;) {
                long pid = strtol(p, &p, 10);
                if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0) killed++;
                while (*p == ' ' || *p == '\n') p++;
                if (pid <= 0) break;
            }
            return killed;
        }
    }
    /* No /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN off): scan /proc for our children. */
    DIR *dir = opendir("/proc");
    if (!dir) return 0;
    pid_t me = getpid();
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        long pid = strtol(entry->d_name, NULL, 10);
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int sfd = open(path, O_RDONLY | O_CLOEXEC);
        if (sfd < 0) continue;
        ssize_t n = read(sfd, buf, sizeof buf - 1);
        close(sfd);
        if (n <= 0) continue;
        buf[n] = 0;
        char *close_paren = strrchr(buf, ')');
        long ppid = 0;
        char state;
        if (close_paren && sscanf(close_paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == me &&
            kill((pid_t)pid, SIGKILL) == 0)
            killed++;
    }
    closedir(dir);
    return killed;
}

/* Kill and reap everything the trial left: group, cgroup, then each generation of
 * descendants as it is re-parented here, until no child is left (wait4 -> ECHILD). */
static int clean_up(pid_t group) {
    int left = 0;
    if (kill(-group, SIGKILL) == 0) left++;
    left += kill_cgroup();
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0 && errno == ECHILD) break;
        if (pid > 0) continue;
        left += kill_children();
        if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD) break;
    }
    /* Processes moved into the cgroup from outside are not our descendants: kill them too. */
    left += kill_cgroup();
    return left;
}

static pid_t spawn_into_cgroup(void) {
    if (cgroup_fd >= 0) {
        struct clone_args_v2 args;
        memset(&args, 0, sizeof args);
        args.flags = CLONE_INTO_CGROUP;
        args.exit_signal = SIGCHLD;
        args.cgroup = (uint64_t)cgroup_fd;
        long pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid >= 0) return (pid_t)pid;
        if (errno != ENOSYS && errno != EINVAL && errno != E2BIG && errno != EPERM) return -1;
        pid_t child = fork();
        if (child == 0 && write_at(cgroup_fd, "cgroup.procs", "0") != 0) {
            dprintf(2, "benchlang: cannot enter the trial's cgroup: %s\n", strerror(errno));
            _exit(126);
        }
        return child;
    }
    return fork();
}

int main(int argc, char **argv) {
    double timeout = -1;
    const char *dir = NULL;
    int opt, aslr = 0;
    while ((opt = getopt(argc, argv, "+t:C:g:RA")) != -1) {
        if (opt == 'R') aslr = -1;
        else if (opt == 'A') aslr = 1;
        else if (opt == 't') timeout = strtod(optarg, NULL);
        else if (opt == 'C') dir = optarg;
        else if (opt == 'g') cgroup_fd = atoi(optarg);
        else return 125;
    }
    if (optind >= argc) {
        dprintf(2, "benchlang-launch: no command\n");
        return 125;
    }
    char **command = argv + optind;
    fcntl(3, F_SETFD, FD_CLOEXEC);
    if (cgroup_fd >= 0) fcntl(cgroup_fd, F_SETFD, FD_CLOEXEC);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    sigset_t wanted, saved;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGCHLD);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGINT);
    sigaddset(&wanted, SIGHUP);
    sigprocmask(SIG_BLOCK, &wanted, &saved);

    long long t0 = now_ns();
    pid_t child = spawn_into_cgroup();
    if (child < 0) {
        dprintf(2, "benchlang: cannot start %s: %s\n", command[0], strerror(errno));
        dprintf(3, "benchlang-launch 1 127 0 0 0 0 0 0 0 0 0 0 0\n");
        return 0;
    }
    if (child == 0) {
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, &saved, NULL);
        if (dir && chdir(dir) != 0) {
            dprintf(2, "benchlang: cannot enter %s: %s\n", dir, strerror(errno));
            _exit(127);
        }
        if (aslr) {
            int persona = personality(0xffffffff);
            persona = aslr < 0 ? (persona | ADDR_NO_RANDOMIZE) : (persona & ~ADDR_NO_RANDOMIZE);
            if (persona < 0 || personality((unsigned long)persona) < 0) {
                dprintf(2, "benchlang: cannot set the personality: %s\n", strerror(errno));
                _exit(127);
            }
        }
        execvp(command[0], command);
        dprintf(2, "benchlang: cannot start '%s': %s\n", command[0], strerror(errno));
        _exit(127);
    }
    setpgid(child, child);

    struct timespec wait_for, *limit = NULL;
    long long deadline = timeout >= 0 ? t0 + (long long)(timeout * 1e9) : 0;
    int status = 0, timed_out = 0, cancelled = 0, done = 0;
    struct rusage usage;
    memset(&usage, 0, sizeof usage);
    long long wall = 0;
    while (!done) {
        /* Reap before sleeping: the command may have exited before the signal was awaited. */
        pid_t pid;
        int st;
        struct rusage ru;
        while ((pid = wait4(-1, &st, WNOHANG, &ru)) > 0) {
            if (pid == child) {
                wall = now_ns() - t0;
                status = st;
                usage = ru;
                done = 1;
            }
        }
        if (done) break;
        if (timeout >= 0) {
            long long left = deadline - now_ns();
            if (left <= 0) {
                timed_out = 1;
                break;
            }
            wait_for.tv_sec = left / 1000000000LL;
            wait_for.tv_nsec = left % 1000000000LL;
            limit = &wait_for;
        }
        int sig = sigtimedwait(&wanted, NULL, limit);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            cancelled = 1;
            break;
        }
    }
    int left = clean_up(child);
    if (!done) {
        /* Timed out or cancelled: clean_up reaped the command, so wait4 cannot report it. */
        wall = now_ns() - t0;
        status = SIGKILL;
        getrusage(RUSAGE_CHILDREN, &usage);
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    dprintf(3, "benchlang-launch 1 %d %lld %lld %lld %ld %ld %ld %ld %ld %d %d %d\n", code, wall,
            (long long)usage.ru_utime.tv_sec * 1000000LL + usage.ru_utime.tv_usec,
            (long long)usage.ru_stime.tv_sec * 1000000LL + usage.ru_stime.tv_usec,
            usage.ru_maxrss, usage.ru_minflt, usage.ru_majflt, usage.ru_nvcsw, usage.ru_nivcsw,
            timed_out, cancelled, left);
    return 0;
}
