/* benchlang-launch: run a session's trials, one at a time, and measure each command alone.
 *
 * Usage: benchlang-launch -d SCRATCH_DIR_FD [-g CGROUP_DIR_FD] [-p PID_MEMFD]
 *        (a Unix stream socket to benchlang on fd 3)
 *
 * benchlang (a ~100 MiB Python process) cannot spawn the command itself and keep max_rss right:
 * at exec, Linux folds the old address space's peak RSS into the new program's
 * signal->maxrss (fs/exec.c, exec_mmap -> setmax_mm_hiwater_rss), so a child
 * spawned from Python reports Python's resident size as its floor. This launcher is small (its
 * resident size is ~1 MiB, like GNU time's), starts the command (sharing its memory until exec,
 * as posix_spawn does, when nothing must be set up before exec; else by fork), waits for it
 * with wait4 and reports the command's own rusage (man 2 wait4, man 2 getrusage).
 *
 * It is started once per session and kept: each trial is one request on fd 3 (a u32 length,
 * then NUL-terminated fields: timeout in seconds or "-1", working directory or "", ASLR "0",
 * "R" (off, as setarch -R) or "A" (on), limits or "", argc, argv..., then the environment's
 * "K=V" entries).
 *
 * Limits (the machine block, docs/machine.md; lines "KEY VALUE", made by cgroups.py):
 * "cpus 0,2" pins the command (sched_setaffinity in the child before exec, inherited by every
 * process of the trial); "join PATH" (cgroup v1 cgroup.procs files) the child writes itself
 * into before exec; "cgroup2 DIR" the trial's own cgroup v2, used instead of -g's for this
 * trial; "rlimit_cpu S" sets RLIMIT_CPU (S soft, S+1 hard: the backstop); "cpu_limit S" with
 * "usage_v1 FILE" (cpuacct.usage, ns) or "usage_v2 FILE" (cpu.stat usage_usec) and "width N"
 * (the trial's CPUs): the launcher reads the trial's CPU time when the limit could first be
 * reached (every CPU busy) and kills the trial once it is; TIMED_OUT is then 2. A child that
 * cannot enter its cgroups or take its CPUs says so on its stderr and exits 126.
 * The trial's stdout and stderr are files of its own, "PID-N.out" and "PID-N.err" in the
 * scratch directory, made after the previous report (while benchlang commits that trial) and
 * deleted after the next one: no file is written by two trials (files a trial left empty
 * and no process outside the launcher holds are the next trial's, under the same N: nothing
 * of the first is in them or can reach them). While a trial
 * runs, a byte on fd 3 cancels it, and end of file (benchlang gone) cancels it and ends the
 * launcher; SIGTERM, SIGINT or SIGHUP do the same.
 *
 * It also owns the trial's isolation:
 *  - the command gets its own process group (setpgid in child and parent, no race);
 *  - with -g, the command is created inside the trial's cgroup v2 (clone3 CLONE_INTO_CGROUP,
 *    Linux >= 5.7; else it writes itself into cgroup.procs before exec), so setsid cannot escape;
 *  - the launcher is a child subreaper (man 2 prctl, PR_SET_CHILD_SUBREAPER): every orphaned
 *    descendant, setsid or not, is re-parented to it.
 * After the command exits (or on timeout or cancellation) everything left is killed: the
 * process group, the cgroup (freeze + kill each pid + thaw, Linux >= 5.2), and every
 * descendant, which it reaps until wait4 says ECHILD: the launcher has no child left when it
 * reports, so nothing of one trial survives into the next. While the command runs, its pid is
 * at offset 0 of the -p memfd (0 otherwise), the number of its files next: benchlang reads
 * them if the launcher dies, to kill the command's group itself and keep its output.
 *
 * Report (one line on fd 3 per request): "benchlang-launch 1 STATUS WALL_NS UTIME_US STIME_US
 * MAXRSS_KIB MINFLT MAJFLT NVCSW NIVCSW TIMED_OUT CANCELLED LEFT N OUT_SIZE ERR_SIZE\n";
 * STATUS is the exit code or minus the signal; LEFT counts processes killed after the command
 * exited; N names the output files. A command that cannot be started gets a message on its
 * stderr and exits 127, as a shell would. "benchlang-launch 1 files ERRNO\n" when the output
 * files cannot be made (nothing ran).
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
#include <sched.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

extern char **environ;
static int cgroup_fd = -1;

/* The trial's command, and what wait4 said when it was reaped (wherever that happened). */
static pid_t command_pid;
static int command_reaped, command_status;
static long long command_end;
static struct rusage command_usage;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Reap one child (any), keeping the command's status and rusage when it is the one. */
static pid_t reap(int flags) {
    int status;
    struct rusage usage;
    pid_t pid = wait4(-1, &status, flags, &usage);
    if (pid > 0 && pid == command_pid && !command_reaped) {
        command_end = now_ns();
        command_reaped = 1;
        command_status = status;
        command_usage = usage;
    }
    return pid;
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
        while (reap(WNOHANG) > 0) {
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
        pid_t pid = reap(WNOHANG);
        if (pid < 0 && errno == ECHILD) break;
        if (pid > 0) continue;
        left += kill_children();
        if (reap(0) < 0 && errno == ECHILD) break;
    }
    /* Processes moved into the cgroup from outside are not our descendants: kill them too. */
    left += kill_cgroup();
    return left;
}


static pid_t spawn_into_cgroup(int err_fd) {
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
            dprintf(err_fd, "benchlang: cannot enter the trial's cgroup: %s\n", strerror(errno));
            _exit(126);
        }
        return child;
    }
    return fork();
}

#define MAX_JOINS 8

/* One trial's request, pointing into the request's buffer. */
struct request {
    double timeout;
    const char *dir;
    int aslr;
    char **argv, **envp;
    int out_fd, err_fd;
    long files; /* the number in the output files' names */
    /* Limits: */
    int pinned, njoins, usage_v2, width;
    cpu_set_t cpus;
    const char *joins[MAX_JOINS], *cgroup2, *usage;
    long rlimit_cpu;
    double cpu_limit;
};

/* The limits field's lines into the request (NUL-terminates each value in place). */
static void parse_limits(char *text, struct request *rq) {
    rq->cpu_limit = -1;
    rq->width = 1;
    CPU_ZERO(&rq->cpus);
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *value = strchr(line, ' ');
        if (value) {
            *value++ = 0;
            if (!strcmp(line, "cpus")) {
                for (char *p = value; *p;) {
                    long cpu = strtol(p, &p, 10);
                    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET((int)cpu, &rq->cpus);
                    rq->pinned = 1;
                    if (*p == ',') p++;
                    else break;
                }
            } else if (!strcmp(line, "join") && rq->njoins < MAX_JOINS) {
                rq->joins[rq->njoins++] = value;
            } else if (!strcmp(line, "cgroup2")) {
                rq->cgroup2 = value;
            } else if (!strcmp(line, "rlimit_cpu")) {
                rq->rlimit_cpu = strtol(value, NULL, 10);
            } else if (!strcmp(line, "cpu_limit")) {
                rq->cpu_limit = strtod(value, NULL);
            } else if (!strcmp(line, "usage_v1") || !strcmp(line, "usage_v2")) {
                rq->usage = value;
                rq->usage_v2 = line[7] == '2';
            } else if (!strcmp(line, "width")) {
                rq->width = (int)strtol(value, NULL, 10);
                if (rq->width < 1) rq->width = 1;
            }
        }
        line = next;
    }
}

/* The trial's CPU time so far in seconds, from its cgroup's accounting; -1 when unreadable. */
static double cpu_used(const struct request *rq) {
    char buf[1024];
    int fd = open(rq->usage, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    if (!rq->usage_v2) return strtod(buf, NULL) / 1e9;
    char *p = strstr(buf, "usage_usec ");
    return p ? strtod(p + 11, NULL) / 1e6 : -1;
}

static int control_fd = 3, signal_fd = -1, pid_fd = -1, scratch_fd = -1;

/* The next trial's stdout and stderr files, created in the scratch directory (-d) after each
 * report, while benchlang commits the trial: "PID-N.out" and "PID-N.err". */
static int ready_out = -1, ready_err = -1, ready_errno;
static long ready_n, last_n;

static void file_name(char *buf, size_t size, long n, const char *suffix) {
    snprintf(buf, size, "%d-%ld.%s", (int)getpid(), n, suffix);
}

static void remove_files(long n) {
    char name[64];
    if (n <= 0) return;
    file_name(name, sizeof name, n, "out");
    unlinkat(scratch_fd, name, 0);
    file_name(name, sizeof name, n, "err");
    unlinkat(scratch_fd, name, 0);
}

static void prepare_files(void) {
    char name[64];
    int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
    if (ready_out >= 0) return;
    long n = ++ready_n;
    file_name(name, sizeof name, n, "out");
    ready_out = openat(scratch_fd, name, flags, 0600);
    file_name(name, sizeof name, n, "err");
    ready_err = ready_out < 0 ? -1 : openat(scratch_fd, name, flags, 0600);
    if (ready_err < 0) {
        ready_errno = errno;
        if (ready_out >= 0) close(ready_out);
        ready_out = -1;
        remove_files(n);
        return;
    }
    /* A lease break (held_only_here) signals SIGCHLD, which only wakes the loop, not SIGIO,
     * whose default action would end the launcher. */
    fcntl(ready_out, F_SETSIG, SIGCHLD);
    fcntl(ready_err, F_SETSIG, SIGCHLD);
}

/* Whether no open file but the launcher's own refers to fd's file: only then is a write lease
 * granted (man 2 fcntl, "Leases"; fs/locks.c, check_conflicting_open). The trial's processes
 * are dead, but one outside its tree and cgroup may hold the file (a service handed the
 * command's stdout, a reopen of /proc/PID/fd/1) and write to it later: that file must not
 * serve the next trial, whose output would then hold the late bytes. */
static int held_only_here(int fd) {
    if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0) return 0;
    fcntl(fd, F_SETLEASE, F_UNLCK);
    return 1;
}

/* Whether the trial just reported left both its files empty: they then serve the next trial
 * (when held_only_here), as nothing of this trial is in them or can come, saving two
 * creations and two removals. */
static int files_unwritten;
static sigset_t wanted, saved;
static int stopping; /* benchlang is gone or a signal asked the launcher to end */

/* The running trial for benchlang, should the launcher die: its command's pid (0 when none)
 * and the number of its output files, as two int64 at offset 0 of the -p memfd. */
static void note_trial(pid_t pid, long files) {
    int64_t state[2] = {pid, files};
    if (pid_fd >= 0) pwrite(pid_fd, state, sizeof state, 0);
}

static void child(const struct request *rq, int ready) {
    setpgid(0, 0);
    /* Before exec: a launcher started with CLONE_VFORK resumes only after it, and a command
     * that kills the launcher at once must still be found by benchlang. */
    note_trial(getpid(), rq->files);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &saved, NULL);
    if (dup2(rq->out_fd, 1) < 0 || dup2(rq->err_fd, 2) < 0) _exit(127);
    long long setting = now_ns();
    for (int i = 0; i < rq->njoins; i++) {
        int fd = open(rq->joins[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
            dprintf(2, "benchlang: cannot enter the trial's cgroup %s: %s\n", rq->joins[i],
                    strerror(errno));
            _exit(126);
        }
        close(fd);
    }
    if (rq->pinned && sched_setaffinity(0, sizeof rq->cpus, &rq->cpus) != 0) {
        dprintf(2, "benchlang: cannot pin the trial to its CPUs: %s\n", strerror(errno));
        _exit(126);
    }
    if (rq->rlimit_cpu > 0) {
        struct rlimit limit = {(rlim_t)rq->rlimit_cpu, (rlim_t)rq->rlimit_cpu + 1};
        if (setrlimit(RLIMIT_CPU, &limit) != 0) {
            dprintf(2, "benchlang: cannot set RLIMIT_CPU: %s\n", strerror(errno));
            _exit(126);
        }
    }
    if (ready >= 0) {
        /* Limits in place: the launcher leaves the time they took out of the trial's wall
         * time (a cgroup v1 attach can wait milliseconds in the kernel); fork and exec stay
         * in it, as for a trial without limits. */
        long long spent = now_ns() - setting;
        if (write(ready, &spent, sizeof spent) != (ssize_t)sizeof spent) _exit(126);
        close(ready);
    }
    if (rq->dir && chdir(rq->dir) != 0) {
        dprintf(2, "benchlang: cannot enter %s: %s\n", rq->dir, strerror(errno));
        _exit(127);
    }
    if (rq->aslr) {
        int persona = personality(0xffffffff);
        persona = rq->aslr < 0 ? (persona | ADDR_NO_RANDOMIZE) : (persona & ~ADDR_NO_RANDOMIZE);
        if (persona < 0 || personality((unsigned long)persona) < 0) {
            dprintf(2, "benchlang: cannot set the personality: %s\n", strerror(errno));
            _exit(127);
        }
    }
    environ = rq->envp; /* execvp looks the program up in the trial's PATH */
    execvp(rq->argv[0], rq->argv);
    dprintf(2, "benchlang: cannot start '%s': %s\n", rq->argv[0], strerror(errno));
    _exit(127);
}

/* A trial without limits to set before exec starts as posix_spawn starts its child (glibc
 * sysdeps/unix/sysv/linux/spawni.c): sharing the launcher's memory until it execs
 * (CLONE_VM | CLONE_VFORK), on a stack of its own, so no page table is copied and no page is
 * faulted in again after the fork, as hyperfine's posix_spawn does; the command's wall time
 * then holds no more than its spawn. The child writes nothing the launcher reads but
 * `environ`, which is put back. Its signal dispositions are its own (no CLONE_SIGHAND) and
 * the launcher catches no signal (signalfd), so none can run a handler on shared memory.
 * At exec Linux folds the old memory's peak resident size into the command's max_rss
 * (exec_mmap -> setmax_mm_hiwater_rss): after fork that is the launcher's resident size at the
 * fork, but shared it would be the launcher's peak since it started (a trial's 1.5 MiB
 * environment raised every later `true` from 0.9 to 2.2 MiB). So the peak is reset to the
 * current size first ("5" to /proc/self/clear_refs, Linux >= 4.0, man 5 proc), else fork. */
static char shared_stack[64 * 1024] __attribute__((aligned(16)));
static int clear_refs_fd = -1;

/* Whether the command can start on shared_stack: glibc's execvp puts a copy of argv there to
 * run a script without "#!" through /bin/sh (posix/execvpe.c, maybe_script_execute); with
 * many arguments it starts by fork, whose child runs on the launcher's own stack. */
static int fits_shared_stack(const struct request *rq) {
    int argc = 0;
    while (rq->argv[argc] && argc < 1024) argc++;
    return argc < 1024;
}

static int shared_child(void *rq) {
    child(rq, -1);
    return 127;
}

#if defined(__x86_64__)
/* clone3 (no glibc wrapper) with the child on shared_stack: it resumes after the syscall on
 * that stack with the parent's registers and calls shared_child(rq), which never returns.
 * Its operands are moved out before %rbp is cleared (the compiler may have put one there);
 * %rcx is free in the child (syscall clobbers it, so no operand is in it). */
static pid_t clone3_shared(struct clone_args_v2 *args, const struct request *rq) {
    long ret;
    int (*start)(void *) = shared_child;
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "mov %[arg], %%rdi\n\t"
                     "mov %[start], %%rcx\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "call *%%rcx\n\t"
                     "ud2\n"
                     "1:"
                     : "=a"(ret)
                     : "0"((long)SYS_clone3), "D"(args), "S"(sizeof *args), [start] "r"(start),
                       [arg] "r"(rq)
                     : "rcx", "r11", "memory");
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return (pid_t)ret;
}
#endif

/* Whether the command can start sharing the launcher's memory: it fits shared_stack, and
 * the launcher's peak resident size was reset (before the command's wall time starts). */
static int can_share(const struct request *rq) {
    return fits_shared_stack(rq) && clear_refs_fd >= 0 && write(clear_refs_fd, "5", 1) == 1;
}

/* The command started sharing the launcher's memory (above; can_share said yes): into the
 * session's cgroup with clone3(CLONE_INTO_CGROUP) where the launcher knows how to call it,
 * else vfork; 0 when it cannot be started so (the caller forks instead). */
static pid_t spawn_shared(const struct request *rq) {
    char **environment = environ;
    pid_t pid = 0;
    if (cgroup_fd < 0) {
        pid = vfork();
        if (pid == 0) _exit(shared_child((void *)rq));
    } else {
#if defined(__x86_64__)
        struct clone_args_v2 args;
        memset(&args, 0, sizeof args);
        args.flags = CLONE_INTO_CGROUP | CLONE_VM | CLONE_VFORK;
        args.exit_signal = SIGCHLD;
        args.stack = (uint64_t)(uintptr_t)shared_stack;
        args.stack_size = sizeof shared_stack;
        args.cgroup = (uint64_t)cgroup_fd;
        pid = clone3_shared(&args, rq);
        if (pid < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG || errno == EPERM))
            pid = 0;
#endif
    }
    environ = environment;
    return pid;
}

/* Whether benchlang cancelled the trial (a byte on fd 3) or went away (end of file). */
static int control_says_stop(void) {
    char byte;
    ssize_t n = read(control_fd, &byte, 1);
    if (n == 1) return 1;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    stopping = 1;
    return 1;
}

/* Whether a stopping signal arrived (SIGCHLD only wakes the loop up). */
static int signal_says_stop(void) {
    struct signalfd_siginfo info;
    int stop = 0;
    while (read(signal_fd, &info, sizeof info) == (ssize_t)sizeof info) {
        if (info.ssi_signo != SIGCHLD) stop = stopping = 1;
    }
    return stop;
}

static void run_trial(const struct request *rq) {
    int session_cgroup = cgroup_fd;
    files_unwritten = 0;
    if (rq->cgroup2) {
        cgroup_fd = open(rq->cgroup2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cgroup_fd < 0) {
            dprintf(rq->err_fd, "benchlang: cannot open the trial's cgroup %s: %s\n",
                    rq->cgroup2, strerror(errno));
            dprintf(control_fd, "benchlang-launch 1 126 0 0 0 0 0 0 0 0 0 0 0 %ld 0 %lld\n",
                    rq->files, (long long)lseek(rq->err_fd, 0, SEEK_END));
            cgroup_fd = session_cgroup;
            return;
        }
    }
    command_pid = 0;
    command_reaped = 0;
    memset(&command_usage, 0, sizeof command_usage);
    note_trial(0, rq->files);
    int ready[2] = {-1, -1};
    if ((rq->njoins || rq->pinned || rq->rlimit_cpu > 0) && pipe2(ready, O_CLOEXEC) != 0)
        ready[0] = ready[1] = -1;
    int shared = ready[0] < 0 && can_share(rq);
    long long t0 = now_ns();
    pid_t pid = shared ? spawn_shared(rq) : 0;
    if (pid == 0) {
        t0 = now_ns();
        pid = spawn_into_cgroup(rq->err_fd);
    }
    if (pid < 0) {
        if (ready[0] >= 0) {
            close(ready[0]);
            close(ready[1]);
        }
        dprintf(rq->err_fd, "benchlang: cannot start %s: %s\n", rq->argv[0], strerror(errno));
        dprintf(control_fd, "benchlang-launch 1 127 0 0 0 0 0 0 0 0 0 0 0 %ld 0 %lld\n",
                rq->files, (long long)lseek(rq->err_fd, 0, SEEK_END));
        if (rq->cgroup2) close(cgroup_fd);
        cgroup_fd = session_cgroup;
        return;
    }
    if (pid == 0) {
        if (ready[0] >= 0) close(ready[0]);
        child(rq, ready[1]);
    }
    command_pid = pid;
    setpgid(pid, pid);
    if (ready[0] >= 0) {
        /* Until the child has its limits (the time they took) or ended without (end of file). */
        long long spent = 0;
        ssize_t n;
        close(ready[1]);
        while ((n = read(ready[0], &spent, sizeof spent)) < 0 && errno == EINTR) {
        }
        close(ready[0]);
        if (n == (ssize_t)sizeof spent && spent > 0) t0 += spent;
    }

    long long deadline = rq->timeout >= 0 ? t0 + (long long)(rq->timeout * 1e9) : 0;
    int timed_out = 0, cancelled = 0, done = 0;
    long long wall = 0;
    struct pollfd fds[2] = {{signal_fd, POLLIN, 0}, {control_fd, POLLIN, 0}};
    for (;;) {
        /* Reap before sleeping: the command may have exited before the signal was read. */
        while (reap(WNOHANG) > 0) {
        }
        if (command_reaped) {
            wall = command_end - t0;
            done = 1;
            break;
        }
        struct timespec wait_for, *limit = NULL;
        long long left = -1;
        if (rq->timeout >= 0) {
            left = deadline - now_ns();
            if (left <= 0) {
                timed_out = 1;
                break;
            }
        }
        if (rq->cpu_limit >= 0 && rq->usage) {
            /* Next look when the limit could first be reached, every CPU of the trial busy. */
            double used = cpu_used(rq);
            if (used >= rq->cpu_limit) {
                timed_out = 2;
                break;
            }
            double wait_s = (rq->cpu_limit - (used < 0 ? 0 : used)) / rq->width;
            long long check = (long long)((wait_s < 0.005 ? 0.005 : wait_s) * 1e9);
            if (left < 0 || check < left) left = check;
        }
        if (left >= 0) {
            wait_for.tv_sec = left / 1000000000LL;
            wait_for.tv_nsec = left % 1000000000LL;
            limit = &wait_for;
        }
        if (ppoll(fds, 2, limit, NULL) < 0 && errno != EINTR) break;
        if ((fds[0].revents && signal_says_stop()) || (fds[1].revents && control_says_stop())) {
            cancelled = 1;
            break;
        }
    }
    int left = clean_up(pid);
    if (rq->cgroup2) {
        close(cgroup_fd);
        cgroup_fd = session_cgroup;
    }
    int status = command_status;
    if (!done) {
        /* Timed out or cancelled: clean_up killed and reaped the command. */
        wall = now_ns() - t0;
        status = SIGKILL;
    }
    note_trial(0, rq->files);
    struct rusage *u = &command_usage;
    struct stat out, err;
    if (fstat(rq->out_fd, &out) != 0) out.st_size = -1;
    if (fstat(rq->err_fd, &err) != 0) err.st_size = -1;
    files_unwritten = out.st_size == 0 && err.st_size == 0;
    if (out.st_size < 0) out.st_size = 0;
    if (err.st_size < 0) err.st_size = 0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    dprintf(control_fd,
            "benchlang-launch 1 %d %lld %lld %lld %ld %ld %ld %ld %ld %d %d %d %ld %lld %lld\n",
            code, wall, (long long)u->ru_utime.tv_sec * 1000000LL + u->ru_utime.tv_usec,
            (long long)u->ru_stime.tv_sec * 1000000LL + u->ru_stime.tv_usec, u->ru_maxrss,
            u->ru_minflt, u->ru_majflt, u->ru_nvcsw, u->ru_nivcsw, timed_out, cancelled, left,
            rq->files, (long long)out.st_size, (long long)err.st_size);
}

static int read_fully(int fd, char *buf, size_t size) {
    while (size) {
        ssize_t n = read(fd, buf, size);
        if (n < 0 && errno == EAGAIN) {
            struct pollfd in = {fd, POLLIN, 0};
            poll(&in, 1, -1);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        buf += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Split a request's fields; NULL when it is malformed. */
static char **parse(char *buf, size_t size, struct request *rq) {
    size_t count = 0;
    for (size_t i = 0; i < size; i++) count += buf[i] == 0;
    if (size == 0 || buf[size - 1] != 0 || count < 6) return NULL;
    char **fields = calloc(count + 2, sizeof *fields);
    if (!fields) return NULL;
    char *p = buf;
    for (size_t i = 0; i < count; i++, p += strlen(p) + 1) fields[i] = p;
    long argc = strtol(fields[4], NULL, 10);
    if (argc < 1 || (size_t)argc + 5 > count) {
        free(fields);
        return NULL;
    }
    rq->timeout = strtod(fields[0], NULL);
    rq->dir = fields[1][0] ? fields[1] : NULL;
    rq->aslr = fields[2][0] == 'R' ? -1 : fields[2][0] == 'A' ? 1 : 0;
    parse_limits(fields[3], rq);
    /* argv and envp each need a NULL after them: shift the environment up by one slot. */
    size_t env_at = 5 + (size_t)argc, envc = count - env_at;
    memmove(fields + env_at + 1, fields + env_at, envc * sizeof *fields);
    fields[env_at] = NULL;
    fields[env_at + 1 + envc] = NULL;
    rq->argv = fields + 5;
    rq->envp = fields + env_at + 1;
    return fields;
}

/* Read one request and run it; 0 at end of file, -1 when malformed. */
static int serve_one(void) {
    uint32_t size;
    ssize_t n;
    do n = read(control_fd, &size, sizeof size);
    while (n < 0 && errno == EINTR);
    if (n == 0) return 0;
    if (n < 0) return errno == EAGAIN ? 1 : -1;
    if (n < (ssize_t)sizeof size && read_fully(control_fd, (char *)&size + n, sizeof size - n))
        return -1;
    char *buf = size < (64u << 20) ? malloc((size_t)size + 1) : NULL;
    struct request rq = {0};
    char **fields = NULL;
    if (buf && read_fully(control_fd, buf, size) == 0) fields = parse(buf, size, &rq);
    if (fields) {
        prepare_files();
        if (ready_out < 0) {
            dprintf(control_fd, "benchlang-launch 1 files %d\n", ready_errno);
        } else {
            rq.out_fd = ready_out;
            rq.err_fd = ready_err;
            rq.files = ready_n;
            ready_out = ready_err = -1;
            run_trial(&rq);
            /* The previous trial's files go, the next one's are made (or this trial's kept,
             * empty, rewound in case the command truncated what it wrote), while benchlang
             * commits this one; this trial's stay until the next report. */
            if (last_n != rq.files) remove_files(last_n);
            last_n = rq.files;
            if (files_unwritten && held_only_here(rq.out_fd) && held_only_here(rq.err_fd) &&
                lseek(rq.out_fd, 0, SEEK_SET) == 0 && lseek(rq.err_fd, 0, SEEK_SET) == 0) {
                ready_out = rq.out_fd;
                ready_err = rq.err_fd;
            } else {
                close(rq.out_fd);
                close(rq.err_fd);
                prepare_files();
            }
        }
    }
    free(fields);
    free(buf);
    return fields ? 1 : -1;
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "g:p:d:")) != -1) {
        if (opt == 'g') cgroup_fd = atoi(optarg);
        else if (opt == 'd') scratch_fd = atoi(optarg);
        else if (opt == 'p') pid_fd = atoi(optarg);
        else return 125;
    }
    fcntl(control_fd, F_SETFD, FD_CLOEXEC);
    fcntl(control_fd, F_SETFL, fcntl(control_fd, F_GETFL) | O_NONBLOCK);
    if (cgroup_fd >= 0) fcntl(cgroup_fd, F_SETFD, FD_CLOEXEC);
    if (pid_fd >= 0) fcntl(pid_fd, F_SETFD, FD_CLOEXEC);
    if (scratch_fd < 0) return 125;
    fcntl(scratch_fd, F_SETFD, FD_CLOEXEC);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGCHLD);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGINT);
    sigaddset(&wanted, SIGHUP);
    sigprocmask(SIG_BLOCK, &wanted, &saved);
    /* Commands start with every signal's default action, as from a shell: Python (the
     * launcher's parent) ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored
     * across execve. Only the launcher itself ignores SIGPIPE (its child resets it). glibc
     * refuses its internal signals (32, 33): they stay as posix_spawn left them. */
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    signal_fd = signalfd(-1, &wanted, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd < 0) return 125;
    clear_refs_fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    prepare_files();
    while (!stopping) {
        /* Wait for a request (or a stopping signal) without holding the socket blocking. */
        struct pollfd fds[2] = {{signal_fd, POLLIN, 0}, {control_fd, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return 1;
        if (fds[0].revents && signal_says_stop()) break;
        while (fds[0].revents && reap(WNOHANG) > 0) {
        }
        if (!fds[1].revents) continue;
        int served = serve_one();
        if (served == 0) break;
        if (served < 0) return 2;
    }
    return 0;
}
