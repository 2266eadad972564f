/*
** pty.c — runs a command on a pseudo-terminal and types its standard input into it,
** a line at a time, each once the command shows its prompt and has been quiet for a
** moment (so that a line goes to readline, not to the terminal's type-ahead), then
** Ctrl-D; everything
** the command writes on the terminal goes to standard output.  For spec/repl_spec.lua,
** which tests the REPL (Tab completion, pretty printing) as a person at a terminal
** sees it.  usage: pty [-t SECONDS] command [args...]; exits with the command's
** status, or 124 when it outlasts the timeout (default 20 s) and is killed.
*/
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define QUIET_MS 200       /* no output for this long after a prompt: it waits for input */
#define STALL_MS 3000      /* ... or this long after anything else (a prompt we do not know) */

static char *slurp(FILE *f, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  *len = n;
  return buf;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Copies the command's output to stdout until it waits for input: quiet QUIET_MS after
** a prompt ("> ", "\n>> "), or STALL_MS after anything else (answers 1); answers 0 once
** the command has closed the terminal or the deadline has passed. A slow start or a
** slow statement (a sanitizer build) is waited for: a line typed early would be echoed
** twice, once by the terminal and once by readline. */
static int drain(int master, double deadline) {
  static char last[2];
  double quiet_since = now();
  for (;;) {
    struct pollfd p = { master, POLLIN, 0 };
    double t = now();
    if (t > deadline) return 0;
    int at_prompt = last[0] == '>' && last[1] == ' ';
    if ((t - quiet_since) * 1000 >= (at_prompt ? QUIET_MS : STALL_MS)) return 1;
    int r = poll(&p, 1, 50);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    char buf[4096];
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) return 0;      /* EIO: the command closed its side */
    fwrite(buf, 1, (size_t)n, stdout);
    if (n >= 2) { last[0] = buf[n - 2]; last[1] = buf[n - 1]; }
    else { last[0] = last[1]; last[1] = buf[0]; }
    quiet_since = now();
  }
}

int main(int argc, char **argv) {
  double timeout = 20;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "-t") == 0) { timeout = atof(argv[2]); first = 3; }
  if (first >= argc) { fprintf(stderr, "usage: pty [-t SECONDS] command [args...]\n"); return 2; }
  size_t len;
  char *input = slurp(stdin, &len);
  if (!input) { perror("pty"); return 1; }
  struct winsize ws = { 24, 80, 0, 0 };
  int master;
  pid_t pid = forkpty(&master, NULL, NULL, &ws);
  if (pid < 0) { perror("forkpty"); return 1; }
  if (pid == 0) {
    execvp(argv[first], argv + first);
    perror(argv[first]);
    _exit(127);
  }
  double deadline = now() + timeout;
  int open = drain(master, deadline);
  size_t at = 0;
  while (open && at < len) {
    const char *nl = memchr(input + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (input + at)) + 1 : len - at;
    if (write(master, input + at, n) != (ssize_t)n) break;
    at += n;
    open = drain(master, deadline);
  }
  if (open && write(master, "\004", 1) == 1) open = drain(master, deadline);
  while (open) open = drain(master, deadline);
  fflush(stdout);
  int status;
  if (now() > deadline) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    fprintf(stderr, "pty: %s timed out after %g s\n", argv[first], timeout);
    return 124;
  }
  waitpid(pid, &status, 0);
  free(input);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
