/*
 * worker.c — the collector's worker processes: fork + exec of Debian's python3 running
 * collector/worker.py with the protocol's environment (docs/PROTOCOL.md) and the allocator tracker preloaded;
 * JSON lines in both directions over pipes.
 *
 * Each worker runs in its own process group (so killing it takes any children along, and a Ctrl-C on the
 * terminal reaches only the collector, which then kills the worker) and dies with the collector
 * (PR_SET_PDEATHSIG), so a SIGKILLed collector leaves no worker running behind it. An address-space limit
 * (RLIMIT_AS) turns "too big for this much memory" into an allocation failure the worker reports as oom.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cli.h"
#include "profile.h"

extern char **environ;

double now_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Variables the protocol sets, and ones that would let another Python or other packages in. */
static int dropped_var(const char *kv)
{
	static const char *const drop[] = { "OMP_NUM_THREADS=", "MKL_NUM_THREADS=", "OPENBLAS_NUM_THREADS=",
		                                "LD_PRELOAD=", "PYTHONPATH=", "PYTHONHOME=", "PYTHONSTARTUP=",
		                                "PYTHONNOUSERSITE=", "PYTHONUSERBASE=", "MALLOC_",
		                                /* the ISA cap comes only from --isa-cap, so that it is recorded */
		                                "ATEN_CPU_CAPABILITY=", "OPENBLAS_CORETYPE=",
		                                /* TensorFlow's and oneDNN's settings (threads, allocator, XLA, fp32 math
		                                 * mode, ISA cap): only what the protocol sets below */
		                                "TF_", "ONEDNN_", "DNNL_" };
	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
		if (!strncmp(kv, drop[i], strlen(drop[i])))
			return 1;
	return 0;
}

static void free_strv(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static char **build_env(const worker_spec *s)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 24, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!dropped_var(environ[i]) && !(env[k++] = strdup(environ[i])))
			goto bad;
	char t[32];
	snprintf(t, sizeof t, "%d", s->threads);
	/* collector/ is a Python package: the worker imports `collector.zoo` and its siblings from the repository
	 * root, which is all PYTHONPATH holds (the caller's is dropped). */
	const char *const fixed[][2] = {
		{ "OMP_NUM_THREADS", t }, { "MKL_NUM_THREADS", t }, { "OPENBLAS_NUM_THREADS", t },
		{ "MALLOC_MMAP_MAX_", "0" }, { "MALLOC_MMAP_THRESHOLD_", "33554432" },
		{ "MALLOC_TRIM_THRESHOLD_", "68719476736" }, { "MALLOC_TOP_PAD_", "536870912" },
		{ "PYTHONNOUSERSITE", "1" }, { "LD_PRELOAD", s->tracker }, { "PYTHONPATH", s->root },
	};
	/* TensorFlow (docs/PROTOCOL.md, "Runtime tf-2.21.0"): its thread pools are sized from these when its runtime
	 * starts (tf.config.threading cannot change them later); oneDNN on, its tensors from posix_memalign (which
	 * the tracker sees) instead of pools that never give memory back; TF_CPU_ALLOCATOR_USE_BFC, TF_XLA_FLAGS and
	 * ONEDNN_DEFAULT_FPMATH_MODE stay unset (dropped above). */
	const char *const tf[][2] = {
		{ "TF_NUM_INTRAOP_THREADS", t }, { "TF_NUM_INTEROP_THREADS", "1" }, { "TF_ENABLE_ONEDNN_OPTS", "1" },
		{ "TF_ONEDNN_USE_SYSTEM_ALLOCATOR", "1" }, { "TF_CPP_MIN_LOG_LEVEL", "2" },
	};
	const size_t n_fixed = sizeof fixed / sizeof fixed[0], n_tf = s->tf_env ? sizeof tf / sizeof tf[0] : 0;
	for (size_t i = 0; i < n_fixed + n_tf + (s->isa_cap ? 3 : 0); i++) {
		const char *const *kv = i < n_fixed ? fixed[i] : i < n_fixed + n_tf ? tf[i - n_fixed] : s->isa_cap->env[i - n_fixed - n_tf];
		size_t len = strlen(kv[0]) + strlen(kv[1]) + 2;
		if (!(env[k] = malloc(len)))
			goto bad;
		snprintf(env[k++], len, "%s=%s", kv[0], kv[1]);
	}
	env[k] = NULL;
	return env;
bad:
	free_strv(env);
	return NULL;
}

static int set_cloexec_nonblock(int fd, int nonblock)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -1;
	if (nonblock) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return -1;
	}
	return 0;
}

int worker_start(worker *w, const worker_spec *s, char *err, size_t errlen)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	char **env = NULL;
	char threads[16];
	memset(w, 0, sizeof *w);
	w->pid = -1;
	w->in_fd = w->out_fd = w->err_fd = -1;
	w->log = s->log;
	snprintf(threads, sizeof threads, "%d", s->threads);
	char *argv[] = { (char *)s->python, (char *)s->script, "--serve", "--threads", threads, NULL };

	if (pipe(in) || pipe(out) || pipe(er)) {
		snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
		goto bad;
	}
	for (int i = 0; i < 2; i++)
		if (set_cloexec_nonblock(in[i], 0) || set_cloexec_nonblock(out[i], i == 0) ||
		    set_cloexec_nonblock(er[i], i == 0)) {
			snprintf(err, errlen, "cannot set up pipes: %s", strerror(errno));
			goto bad;
		}
	if (!(env = build_env(s))) {
		snprintf(err, errlen, "out of memory");
		goto bad;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "cannot start a worker: %s", strerror(errno));
		goto bad;
	}
	if (pid == 0) {
		/* The child: only async-signal-safe calls from here to exec. */
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(er[1], 2);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127); /* the collector died before the line above */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGPIPE, &dfl, NULL);
		sigaction(SIGINT, &dfl, NULL);
		sigaction(SIGTERM, &dfl, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (s->mem_limit) {
			struct rlimit rl = { (rlim_t)s->mem_limit, (rlim_t)s->mem_limit };
			setrlimit(RLIMIT_AS, &rl);
		}
		execve(s->python, argv, env);
		static const char msg[] = "abacus profile: cannot execute the Python interpreter\n";
		(void)!write(2, msg, sizeof msg - 1);
		_exit(127);
	}
	setpgid(pid, pid); /* also here: whichever runs first, the group exists before we might kill it */
	free_strv(env);
	close(in[0]);
	close(out[1]);
	close(er[1]);
	w->pid = pid;
	w->in_fd = in[1];
	w->out_fd = out[0];
	w->err_fd = er[0];
	return 0;
bad:
	free_strv(env);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (er[i] >= 0)
			close(er[i]);
	}
	return -1;
}

int worker_send(worker *w, const char *line)
{
	size_t n = strlen(line);
	const char *p = line;
	for (int part = 0; part < 2; part++) {
		while (n) {
			ssize_t r = write(w->in_fd, p, n);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				return -1; /* EPIPE: the worker has gone (SIGPIPE is ignored by the collector) */
			}
			p += r;
			n -= (size_t)r;
		}
		p = "\n";
		n = 1;
	}
	return 0;
}

static void keep_err(worker *w, const char *buf, size_t n)
{
	const size_t cap = sizeof w->err_tail - 1;
	if (w->log) {
		fwrite(buf, 1, n, w->log);
		fflush(w->log);
	}
	if (n >= cap) {
		memcpy(w->err_tail, buf + n - cap, cap);
		w->err_len = cap;
	} else {
		if (w->err_len + n > cap) {
			size_t drop = w->err_len + n - cap;
			memmove(w->err_tail, w->err_tail + drop, w->err_len - drop);
			w->err_len -= drop;
		}
		memcpy(w->err_tail + w->err_len, buf, n);
		w->err_len += n;
	}
	w->err_tail[w->err_len] = '\0';
}

/* Reads what is available on fd; returns bytes read, 0 at EOF, -1 when nothing is available now. */
static ssize_t drain(worker *w, int which)
{
	char buf[65536];
	int fd = which ? w->err_fd : w->out_fd;
	ssize_t total = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return total ? total : -1;
		}
		if (r == 0)
			return total ? total : 0;
		if (which) {
			keep_err(w, buf, (size_t)r);
		} else {
			if (w->out_len + (size_t)r + 1 > w->out_cap) {
				size_t nc = (w->out_len + (size_t)r + 1) * 2;
				char *nb = realloc(w->out, nc);
				if (!nb)
					return -1;
				w->out = nb;
				w->out_cap = nc;
			}
			memcpy(w->out + w->out_len, buf, (size_t)r);
			w->out_len += (size_t)r;
		}
		total += r;
	}
}

/* Waits for the worker to exit for up to `wait_s`, then kills its group; stores the status. */
static void reap(worker *w, double wait_s)
{
	if (w->reaped || w->pid <= 0)
		return;
	double end = now_monotonic() + wait_s;
	for (;;) {
		pid_t r = waitpid(w->pid, &w->status, WNOHANG);
		if (r == w->pid)
			break;
		if (r < 0 && errno != EINTR) {
			w->status = 0;
			break;
		}
		if (now_monotonic() >= end) {
			kill(-w->pid, SIGKILL);
			kill(w->pid, SIGKILL);
			while (waitpid(w->pid, &w->status, 0) < 0 && errno == EINTR)
				;
			break;
		}
		if (w->err_fd >= 0)
			(void)drain(w, 1);
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	w->reaped = 1;
}

worker_result worker_read(worker *w, jobj *o, double timeout_s, volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	double deadline = now_monotonic() + timeout_s;
	int out_open = 1;
	for (;;) {
		/* A complete line already buffered? Lines that are not objects (stray output) are skipped. */
		char *nl;
		while (w->out_len && (nl = memchr(w->out, '\n', w->out_len))) {
			*nl = '\0';
			size_t used = (size_t)(nl - w->out) + 1;
			int is_obj = w->out[0] == '{';
			worker_result res = WR_OK;
			if (is_obj && jobj_parse(o, w->out, err, errlen))
				res = WR_BADLINE;
			memmove(w->out, w->out + used, w->out_len - used);
			w->out_len -= used;
			if (is_obj)
				return res;
		}
		if (!out_open) {
			(void)drain(w, 1);
			reap(w, 5.0);
			return WR_DIED;
		}
		if (stop && *stop)
			return WR_INTERRUPTED;
		double left = deadline - now_monotonic();
		if (left <= 0)
			return WR_TIMEOUT;
		struct pollfd p[2] = { { w->out_fd, POLLIN, 0 }, { w->err_fd, POLLIN, 0 } };
		int ms = left > 0.25 ? 250 : (int)(left * 1000) + 1;
		int r = poll(p, w->err_fd >= 0 ? 2 : 1, ms);
		if (r < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return WR_DIED;
		}
		if (r <= 0)
			continue;
		if (w->err_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) && drain(w, 1) == 0) {
			close(w->err_fd);
			w->err_fd = -1;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			if (drain(w, 0) == 0)
				out_open = 0;
	}
}

void worker_stop(worker *w, double grace_s)
{
	if (w->pid <= 0)
		return;
	if (w->in_fd >= 0) {
		close(w->in_fd);
		w->in_fd = -1;
	}
	reap(w, grace_s);
	if (w->out_fd >= 0)
		close(w->out_fd);
	if (w->err_fd >= 0) {
		(void)drain(w, 1);
		close(w->err_fd);
	}
	w->out_fd = w->err_fd = -1;
	free(w->out);
	w->out = NULL;
	w->out_len = w->out_cap = 0;
	w->pid = -1;
}

void worker_last_err(const worker *w, char *buf, size_t len)
{
	const char *s = w->err_tail;
	size_t n = w->err_len;
	/* Python's faulthandler ends a crash report with the list of extension modules; its first line says
	 * what happened. */
	const char *fatal = strstr(s, "Fatal Python error: ");
	if (fatal) {
		size_t k = strcspn(fatal, "\n");
		if (k > len - 1)
			k = len - 1;
		memcpy(buf, fatal, k);
		buf[k] = '\0';
		return;
	}
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
		n--;
	size_t start = n;
	while (start && s[start - 1] != '\n')
		start--;
	size_t k = n - start < len - 1 ? n - start : len - 1;
	memcpy(buf, s + start, k);
	buf[k] = '\0';
}

void worker_describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *name = sig == SIGKILL ? "SIGKILL" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGABRT ? "SIGABRT"
		                 : sig == SIGBUS ? "SIGBUS" : sig == SIGTERM ? "SIGTERM" : sig == SIGILL ? "SIGILL"
		                 : sig == SIGFPE ? "SIGFPE" : "signal";
		snprintf(buf, len, "killed by signal %d (%s)", sig, name);
	} else if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	} else {
		snprintf(buf, len, "ended (wait status %d)", status);
	}
}
