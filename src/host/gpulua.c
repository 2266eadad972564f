/*
** gpulua: the stand-alone interpreter.
**
** A drop-in for the standard `lua` command (Lua 5.4): the same options, `arg`
** table, LUA_INIT handling, exit statuses and error reports, and the same
** read-eval-print loop, always over GNU readline.  The `gpu` module is opened
** with the standard libraries, so scripts find a global `gpu` and
** `require "gpu"` returns the same table.  Extras, read with the standard
** options: `--device NAME`, `--check`, `--version`, `--help`;
** the banner adds gpulua's line only at a terminal, so that every
** redirected output is byte for byte lua5.4's.
**
** The shape follows lua.c: `main` only makes the state and runs `pmain` in
** protected mode; options are read twice (`collectargs` validates them and
** notes which are present, `runargs` executes -e/-l/-W in order); SIGINT
** during a call only installs a hook, which raises the error from inside Lua.
** It also asks the gpu op that may be running to stop (src/core/interrupt.h):
** Lua sees the hook only between instructions, the op polls inside its loops.
*/

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

#include "../gpulua.h"
#include "../core/interrupt.h"

#define GPULUA_PROGNAME    "gpulua"
#define GPULUA_PROMPT      "> "
#define GPULUA_PROMPT2     ">> "
#define GPULUA_HISTORY     ".gpulua_history"
#define GPULUA_HISTORY_MAX 1000
#define GPULUA_INITVAR     "LUA_INIT"
#define GPULUA_INITVARVER  "LUA_INIT_5_4"

static const char *progname = GPULUA_PROGNAME;

/* the state a SIGINT during a call must reach; signal handlers take no argument */
static lua_State *globalL = NULL;

/* set by the SIGINT handler that is active while the REPL waits for a line */
static volatile sig_atomic_t line_interrupted = 0;


/* ===================================================================== */
/* Signals                                                               */
/* ===================================================================== */

static void set_sigint (void (*handler) (int), int restart) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, NULL);
}

/*
** Raising an error from a signal handler is not safe, so the handler only
** sets a hook; the hook runs at the next Lua instruction, inside the state,
** where an error is legal.  The hook removes itself first.  The handler also
** asks a running gpu op to stop; when an op took that request, its error
** ("sum: interrupted") already reports this Ctrl-C and the hook stays quiet.
*/
static void interrupt_hook (lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  if (gl_interrupt_clear())
    luaL_error(L, "interrupted!");
}

/* a second Ctrl-C before the hook fires kills the process, as in lua.c */
static void on_sigint_call (int sig) {
  int mask = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  signal(sig, SIG_DFL);
  gl_interrupt_request();
  lua_sethook(globalL, interrupt_hook, mask, 1);
}

static void on_sigint_line (int sig) {
  (void)sig;
  line_interrupted = 1;
}


/* ===================================================================== */
/* Messages and calls                                                    */
/* ===================================================================== */

/* lua.c's list of options, word for word: a bad option's report must match lua5.4's */
#define LUA_USAGE \
  "usage: %s [options] [script [args]]\n" \
  "Available options are:\n" \
  "  -e stat   execute string 'stat'\n" \
  "  -i        enter interactive mode after executing 'script'\n" \
  "  -l mod    require library 'mod' into global 'mod'\n" \
  "  -l g=mod  require library 'mod' into global 'g'\n" \
  "  -v        show version information\n" \
  "  -E        ignore environment variables\n" \
  "  -W        turn warnings on\n" \
  "  --        stop handling options\n" \
  "  -         stop handling options and execute stdin\n"

/*
** A bad option: the same report as lua5.4's (stderr, then status 1), so that
** scripts and Lua's own test suite cannot tell the two apart.  gpulua's
** --device is the one extra option that can lack its argument.
*/
static void print_usage (const char *badoption) {
  fprintf(stderr, "%s: ", progname);
  if (badoption[1] == 'e' || badoption[1] == 'l' ||
      strcmp(badoption, "--device") == 0)
    fprintf(stderr, "'%s' needs argument\n", badoption);
  else
    fprintf(stderr, "unrecognized option '%s'\n", badoption);
  fprintf(stderr, LUA_USAGE, progname);
  fflush(stderr);
}

/*
** Where the documentation is: PREFIX/share/doc/gpulua when this binary runs
** from PREFIX/bin (an installed copy, found through /proc/self/exe, so that a
** DESTDIR or a moved prefix still answers right; *installed is set), else the
** folder that holds the binary (a build tree, README.md beside it).  NULL
** when unknown.
*/
static const char *doc_dir (char *buf, size_t size, int *installed) {
  static const char docs[] = "/share/doc/gpulua";
  ssize_t n = readlink("/proc/self/exe", buf, size - sizeof(docs));
  char *slash;
  *installed = 0;
  if (n <= 0) return NULL;
  buf[n] = '\0';
  if ((slash = strrchr(buf, '/')) == NULL) return NULL;
  *slash = '\0';                                /* the binary's folder */
  if (slash - buf >= 4 && strcmp(slash - 4, "/bin") == 0) {
    char *end = slash - 4;
    strcpy(end, docs);
    if (access(buf, R_OK) == 0) {
      *installed = 1;
      return buf;
    }
    strcpy(end, "/bin");                        /* not installed: back to bin */
  }
  return buf;
}

/* --help: lua's options, gpulua's, the environment and the docs (stdout, status 0) */
static void print_help (void) {
  char buf[4096];
  int installed;
  const char *docs = doc_dir(buf, sizeof(buf), &installed);
  printf(LUA_USAGE, progname);
  printf(
    "gpulua's own options:\n"
    "  --device d  make 'd' (cpu, cuda, cuda:N) the default device\n"
    "  --check     report the build and devices, self-test each device\n"
    "  --version   show gpulua's version\n"
    "  --help      show this help\n"
    "Environment:\n"
    "  LUA_INIT_5_4, LUA_INIT  code (or @file) run before the options\n"
    "  LUA_PATH_5_4, LUA_PATH, LUA_CPATH_5_4, LUA_CPATH  where require looks\n"
    "  GPULUA_DEVICE=cpu|cuda|cuda:N  the default device (--device wins)\n"
    "  GPULUA_SYNC=1         wait for each CUDA op: errors name the op at fault\n"
    "  GPULUA_MEMORY_LIMIT   cap of the CUDA memory pool: bytes, 4G, or a\n"
    "                        fraction of the device's memory (0.5)\n"
    "  CUDA_VISIBLE_DEVICES  the GPUs CUDA may use\n"
    "  OMP_NUM_THREADS       threads of the CPU backend\n"
    "  GPULUA_DNNL=0         no oneDNN on the CPU: convolutions, pooling and batch\n"
    "                        norm take im2col + GEMM and array ops\n"
    "  GPULUA_DNNL_POOL=1    CPU pooling through oneDNN (else gpulua's own loops)\n"
    "  GPULUA_DNNL_REFUSE=1  (testing) oneDNN refuses every convolution and LSTM/GRU:\n"
    "                        the im2col + GEMM fallback inside its path and nn's\n"
    "                        fused recurrent loops run\n"
    "  GPULUA_FFTW_PLANNER   estimate: gpu.fft keeps FFTW's first (estimated) plans\n"
    "                        and no wisdom; measure: it measures every layout at once\n"
    "                        (wisdom kept in $XDG_CACHE_HOME/gpulua/fftw)\n"
    "  GPULUA_TEST_BACKEND=1 (testing) a second cpu backend, \"testcpu\", is registered\n"
    "  GPULUA_PLAIN          set: fit's progress is plain lines\n"
    "  GPULUA_GNUPLOT        the gnuplot program of gpu.plot (default: gnuplot)\n"
    "  GPULUA_SIXEL=1        gpu.plot draws sixel graphics on the terminal\n"
    "  GPULUA_DIST_TIMEOUT   seconds a gpu.distributed collective may wait (1800)\n"
    "  FASHION_MNIST         folder of the Fashion-MNIST files (gpu.data)\n"
    "Documentation: ");
  if (docs == NULL)
    printf("man gpulua\n");
  else if (installed)
    printf("man gpulua; README.md and doc/API.md in %s\n", docs);
  else
    printf("man %s/doc/gpulua.1; README.md and doc/API.md in %s\n", docs, docs);
  fflush(stdout);
}

/* in the REPL progname is NULL: errors there carry no program name */
static void l_message (const char *pname, const char *msg) {
  if (pname) fprintf(stderr, "%s: ", pname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}

/* print the error on top of the stack, if any; pass the status through */
static int report (lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    l_message(progname, msg ? msg : "(error object is not a string)");
    /* a script's error (not the REPL's): under gpu.distributed the other ranks are told
    ** and the job ends (MPI_Abort); nothing happens when no job of several ranks runs */
    if (progname) gpulua_dist_fail(msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

/*
** Message handler: append a traceback to string errors; give other error
** objects a chance to describe themselves through __tostring.
*/
static int msghandler (lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* call the function below its `narg` arguments with the traceback handler */
static int docall (lua_State *L, int narg, int nres) {
  int status;
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  (void)gl_interrupt_clear();   /* a Ctrl-C that came after the last call ended */
  set_sigint(on_sigint_call, 1);
  status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

static int dochunk (lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}

static int dofile (lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}

static int dostring (lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* `-l g=mod` sets global g = require "mod"; `-l mod` sets mod = require "mod" */
static int dolibrary (lua_State *L, char *spec) {
  int status;
  char *globname = spec;
  char *modname = strchr(spec, '=');
  if (modname == NULL)
    modname = spec;
  else
    *modname++ = '\0';
  lua_getglobal(L, "require");
  lua_pushstring(L, modname);
  status = docall(L, 1, 1);
  if (status == LUA_OK)
    lua_setglobal(L, globname);
  return report(L, status);
}

/* push the script's arguments arg[1..#arg]; return how many */
static int pushargs (lua_State *L) {
  int i, n;
  if (lua_getglobal(L, "arg") != LUA_TTABLE)
    luaL_error(L, "'arg' is not a table");
  n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (i = 1; i <= n; i++)
    lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

/* argv[0] is the script; "-" means stdin unless it came right after "--" */
static int handle_script (lua_State *L, char **argv) {
  int status;
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0)
    fname = NULL;
  status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = pushargs(L);
    status = docall(L, n, LUA_MULTRET);
  }
  return report(L, status);
}

/* LUA_INIT_5_4, else LUA_INIT: a chunk of code, or `@file` */
static int handle_luainit (lua_State *L) {
  const char *name = "=" GPULUA_INITVARVER;
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=" GPULUA_INITVAR;
    init = getenv(name + 1);
  }
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dofile(L, init + 1);
  return dostring(L, init, name);
}


/* ===================================================================== */
/* Options                                                               */
/* ===================================================================== */

/* bits of `collectargs`'s answer */
#define has_error   1   /* bad option */
#define has_i       2   /* -i */
#define has_v       4   /* -v */
#define has_e       8   /* -e */
#define has_E      16   /* -E */
#define has_check  32   /* --check */
#define has_ver    64   /* --version */
#define has_help  128   /* --help */

/* the argument of --device, if given (the last one wins) */
static const char *device_name = NULL;

/*
** First pass: check the options and note which are present.  `*first` ends
** at the script's index (argc when there is none), or at the bad option.
** Options that take an argument accept it glued (`-eprint(1)`,
** `--device=cpu`) or as the next word, which must not look like an option.
*/
static int collectargs (char **argv, int *first) {
  int args = 0;
  int i;
  if (argv[0] != NULL) {
    if (argv[0][0]) progname = argv[0];
  }
  else {
    *first = -1;
    return 0;
  }
  for (i = 1; argv[i] != NULL; i++) {
    *first = i;
    if (argv[i][0] != '-')
      return args;                  /* the script */
    switch (argv[i][1]) {
      case '-':
        if (argv[i][2] == '\0') {     /* "--" */
          *first = i + 1;
          return args;
        }
        if (strcmp(argv[i], "--check") == 0)
          args |= has_check;
        else if (strcmp(argv[i], "--version") == 0)
          args |= has_ver;
        else if (strcmp(argv[i], "--help") == 0)
          args |= has_help;
        else if (strncmp(argv[i], "--device=", 9) == 0)
          device_name = argv[i] + 9;
        else if (strcmp(argv[i], "--device") == 0) {
          if (argv[i + 1] == NULL || argv[i + 1][0] == '-')
            return has_error;
          device_name = argv[++i];
        }
        else
          return has_error;
        break;
      case '\0':                      /* "-": the script is stdin */
        return args;
      case 'E':
        if (argv[i][2] != '\0') return has_error;
        args |= has_E;
        break;
      case 'W':
        if (argv[i][2] != '\0') return has_error;
        break;
      case 'i':
        args |= has_i;                /* -i implies -v */
        /* FALLTHROUGH */
      case 'v':
        if (argv[i][2] != '\0') return has_error;
        args |= has_v;
        break;
      case 'e':
        args |= has_e;
        /* FALLTHROUGH */
      case 'l':
        if (argv[i][2] == '\0') {
          i++;
          if (argv[i] == NULL || argv[i][0] == '-')
            return has_error;
        }
        break;
      default:
        return has_error;
    }
  }
  *first = i;
  return args;
}

/* Second pass: run -e, -l and -W in the order given.  `n` ends the options. */
static int runargs (lua_State *L, char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
      case 'e':
      case 'l': {
        int status;
        char *extra = argv[i] + 2;
        if (*extra == '\0') extra = argv[++i];
        status = (option == 'e') ? dostring(L, extra, "=(command line)")
                                 : dolibrary(L, extra);
        if (status != LUA_OK) return 0;
        break;
      }
      case 'W':
        lua_warning(L, "@on", 0);
        break;
      case '-':
        if (strcmp(argv[i], "--device") == 0) i++;  /* skip its argument */
        break;
    }
  }
  return 1;
}

/*
** arg[0] is the script, positive indices its arguments, negative indices
** the interpreter and its options.  Without a script (`script` == argc)
** the indices count from the interpreter, which is then arg[0].
*/
static void createargtable (lua_State *L, char **argv, int argc, int script) {
  int i, narg;
  if (script == argc) script = 0;
  narg = argc - (script + 1);
  lua_createtable(L, narg, script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}


/* ===================================================================== */
/* The gpu module and the extras                                         */
/* ===================================================================== */

static void print_version (void) {
  fputs(LUA_COPYRIGHT, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

/* push gpu.version (a string), or nil when the module has none */
static void push_gpu_version (lua_State *L) {
  lua_getglobal(L, "gpu");
  if (lua_istable(L, -1))
    lua_getfield(L, -1, "version");
  else
    lua_pushnil(L);
  lua_remove(L, -2);
}

/* --version: gpulua's version and the Lua it runs */
static void print_gpu_version (lua_State *L) {
  push_gpu_version(L);
  printf("%s %s (%s)\n", GPULUA_PROGNAME,
         lua_isstring(L, -1) ? lua_tostring(L, -1) : "(unknown version)", LUA_RELEASE);
  fflush(stdout);
  lua_pop(L, 1);
}

/*
** gpulua's banner line, after Lua's, for a person at a terminal only: with
** stdin or stdout redirected the REPL's output stays byte for byte lua5.4's.
** The device is asked for in protected mode: a failure only drops the part.
*/
static void print_banner_extra (lua_State *L) {
  int top = lua_gettop(L);
  const char *version, *device = NULL;
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return;
  push_gpu_version(L);
  version = lua_isstring(L, -1) ? lua_tostring(L, -1) : "(unknown version)";
  if (lua_getglobal(L, "gpu") == LUA_TTABLE &&
      lua_getfield(L, -1, "device") == LUA_TFUNCTION &&
      lua_pcall(L, 0, 1, 0) == LUA_OK)
    device = lua_tostring(L, -1);
  printf("%s %s", GPULUA_PROGNAME, version);
  if (device != NULL) printf(", new arrays on %s", device);
  printf("; %s --help lists the options\n", GPULUA_PROGNAME);
  fflush(stdout);
  lua_settop(L, top);
}

/* gpu.set_device(name), reported like any other error */
static int set_device (lua_State *L, const char *name) {
  lua_getglobal(L, "gpu");
  lua_getfield(L, -1, "set_device");
  lua_remove(L, -2);
  lua_pushstring(L, name);
  return report(L, docall(L, 1, 0));
}

/* require("gpu.check")(): prints the report; true when every device passed */
static int run_check (lua_State *L, int *passed) {
  int status;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gpu.check");
  status = docall(L, 1, 1);
  if (status == LUA_OK)
    status = docall(L, 0, 1);
  if (status == LUA_OK) {
    *passed = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  return report(L, status);
}


/* ===================================================================== */
/* REPL                                                                  */
/* ===================================================================== */

#define EOFMARK  "<eof>"
#define marklen  (sizeof(EOFMARK) / sizeof(char) - 1)

/* ~/.gpulua_history, or NULL when HOME is unset (then no history is kept) */
static char *history_path = NULL;

/*
** Readline's own reader goes back to `read` after a SIGINT.  This one gives
** up the line once our handler has fired: it answers a newline, so readline
** returns at once, and `line_interrupted` tells the caller to drop the line.
** Readline's handlers only note a signal; rl_check_signals lets readline do
** its part (echo ^C, restore the terminal, call our handler, re-prepare),
** which also keeps Ctrl-Z and window resizes working.
*/
static int repl_getc (FILE *f) {
  for (;;) {
    unsigned char c;
    ssize_t n;
    if (line_interrupted) return '\n';
    n = read(fileno(f), &c, 1);
    if (n == 1) return c;
    if (n == 0) return EOF;
    if (errno != EINTR) return EOF;
#if RL_READLINE_VERSION >= 0x0801
    rl_check_signals();
#endif
  }
}

/*
** The REPL's Lua part, gpu.repl (lua/gpu/repl.lua): Tab completion and, when stdin
** is a terminal, pretty printing.  Piped input keeps lua5.4's output byte for byte.
*/
static const char repl_key = 'r';   /* registry: the gpu.repl table */
static lua_State *repl_L = NULL;    /* the state readline's completion reads */
static int repl_pretty = 0;         /* print results through gpu.repl.print */

/* loads gpu.repl, and makes gpu.help the global `help` unless one exists */
static int open_repl_part (lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "gpu.repl");
  lua_call(L, 1, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &repl_key);
  if (lua_getglobal(L, "help") == LUA_TNIL) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "gpu.help");
    lua_call(L, 1, 1);
    lua_setglobal(L, "help");
  }
  return 0;
}

/* gpu.repl.candidates(text) in protected mode: text is a light userdata */
static int call_candidates (lua_State *L) {
  const char *text = (const char *)lua_touserdata(L, 1);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &repl_key) != LUA_TTABLE) return 0;
  lua_getfield(L, -1, "candidates");
  lua_pushstring(L, text);
  lua_call(L, 1, 1);
  return 1;
}

/* readline's generator: the next string of the candidates table on top of the stack */
static int completion_next = 0;
static char *completion_generator (const char *text, int state) {
  lua_State *L = repl_L;
  const char *s;
  char *match = NULL;
  (void)text;
  if (state == 0) completion_next = 0;
  lua_rawgeti(L, -1, ++completion_next);
  s = lua_tostring(L, -1);
  if (s != NULL) match = strdup(s);   /* readline frees it */
  lua_pop(L, 1);
  return match;
}

/* Tab: gpu.repl's candidates for the word before the cursor, never file names */
static char **repl_completion (const char *text, int start, int end) {
  lua_State *L = repl_L;
  char **matches = NULL;
  (void)start; (void)end;
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0';
  if (L == NULL || !lua_checkstack(L, 8)) return NULL;
  lua_pushcfunction(L, call_candidates);
  lua_pushlightuserdata(L, (void *)text);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1))
    matches = rl_completion_matches(text, completion_generator);
  lua_pop(L, 1);
  return matches;
}

/* `gpu.ra` and `x:me` are one word: `.` and `:` do not break words */
static char word_breaks[] = " \t\n\"\\'`@$><=;|&{(+-*/%^,[]~#)}";

static void init_readline (void) {
  const char *home = getenv("HOME");
  rl_readline_name = GPULUA_PROGNAME;
  rl_attempted_completion_function = repl_completion;
  rl_basic_word_break_characters = word_breaks;
  rl_completer_word_break_characters = word_breaks;
#if RL_READLINE_VERSION < 0x0801
  rl_catch_signals = 0;   /* no rl_check_signals: keep SIGINT to ourselves */
#endif
  rl_getc_function = repl_getc;
  using_history();
  if (home != NULL && home[0] != '\0') {
    size_t len = strlen(home) + sizeof("/" GPULUA_HISTORY);
    history_path = malloc(len);
    if (history_path != NULL) {
      snprintf(history_path, len, "%s/%s", home, GPULUA_HISTORY);
      (void)read_history(history_path);           /* a missing file is fine */
      (void)history_truncate_file(history_path, GPULUA_HISTORY_MAX);
    }
  }
}

static void close_readline (void) {
  free(history_path);
  history_path = NULL;
}

/* remember a line in memory and at the end of the history file */
static void save_line (const char *line) {
  if (line[0] == '\0') return;
  add_history(line);
  if (history_path != NULL && append_history(1, history_path) != 0)
    (void)write_history(history_path);   /* the file did not exist yet */
}

/* the prompt as a string on the stack: _PROMPT/_PROMPT2 through tostring */
static const char *get_prompt (lua_State *L, int firstline) {
  if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushstring(L, firstline ? GPULUA_PROMPT : GPULUA_PROMPT2);
  }
  else {
    luaL_tolstring(L, -1, NULL);
    lua_remove(L, -2);
  }
  return lua_tostring(L, -1);
}

/* answers of `pushline` */
#define LINE_OK           1
#define LINE_EOF          0
#define LINE_INTERRUPTED  (-1)

/* answers of `loadline` besides a load status (which is never negative) */
#define LOAD_EOF          (-1)
#define LOAD_INTERRUPTED  (-2)

/*
** Read a line and push it.  While reading, Ctrl-C abandons the line (and
** with it any statement being continued) instead of killing the process.
*/
static int pushline (lua_State *L, int firstline) {
  char *b;
  size_t l;
  const char *prmt = get_prompt(L, firstline);
  line_interrupted = 0;
  set_sigint(on_sigint_line, 0);
  b = readline(prmt);
  signal(SIGINT, SIG_DFL);
  lua_pop(L, 1);  /* prompt */
  if (line_interrupted) {
    line_interrupted = 0;
    free(b);
    return LINE_INTERRUPTED;
  }
  if (b == NULL) return LINE_EOF;
  l = strlen(b);
  if (l > 0 && b[l - 1] == '\n') b[--l] = '\0';
  if (firstline && b[0] == '=')    /* `=expr`, as in Lua 5.2 */
    lua_pushfstring(L, "return %s", b + 1);
  else
    lua_pushlstring(L, b, l);
  free(b);
  return LINE_OK;
}

/* try the line as `return <line>;` so that bare expressions print */
static int addreturn (lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK) {
    lua_remove(L, -2);
    save_line(line);
  }
  else
    lua_pop(L, 2);
  return status;
}

/* a syntax error that ends at <eof> means the statement is unfinished */
static int incomplete (lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    if (lmsg >= marklen && strcmp(msg + lmsg - marklen, EOFMARK) == 0) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;
}

/* compile the line as a statement, reading continuation lines while needed */
static int multiline (lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    int more;
    if (!incomplete(L, status)) {
      save_line(line);
      return status;
    }
    more = pushline(L, 0);
    if (more == LINE_INTERRUPTED) {
      save_line(line);
      return LOAD_INTERRUPTED;
    }
    if (more == LINE_EOF) {
      /* reload to get the <eof> error back for the report */
      save_line(line);
      return luaL_loadbuffer(L, line, len, "=stdin");
    }
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/*
** Read and compile one complete input.  Answers a load status with the
** function (or the error) on the stack, LOAD_EOF at end of input, or
** LOAD_INTERRUPTED when Ctrl-C abandoned the input (nothing on the stack).
*/
static int loadline (lua_State *L) {
  int status;
  lua_settop(L, 0);
  status = pushline(L, 1);
  if (status == LINE_EOF) return LOAD_EOF;
  if (status == LINE_INTERRUPTED) return LOAD_INTERRUPTED;
  if ((status = addreturn(L)) != LUA_OK)
    status = multiline(L);
  if (status == LOAD_INTERRUPTED) {
    lua_settop(L, 0);
    return LOAD_INTERRUPTED;
  }
  lua_remove(L, 1);
  return status;
}

/*
** print the results on the stack with the global `print` (so __tostring applies),
** or, at a terminal, with gpu.repl.print (pretty; always called: it also forgets
** the reports printed during the evaluation)
*/
static void l_print (lua_State *L) {
  int n = lua_gettop(L);
  if (n > 0 || repl_pretty) {
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    if (repl_pretty) {
      lua_rawgetp(L, LUA_REGISTRYINDEX, &repl_key);
      lua_getfield(L, -1, "print");
      lua_remove(L, -2);
    }
    else
      lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
      l_message(progname, lua_pushfstring(L, "error calling 'print' (%s)",
                                             lua_tostring(L, -1)));
  }
}

static void doREPL (lua_State *L) {
  int status;
  const char *oldprogname = progname;
  progname = NULL;
  repl_L = L;
  lua_pushcfunction(L, open_repl_part);
  if ((status = docall(L, 0, 0)) != LUA_OK)
    report(L, status);    /* the plain REPL still works */
  else
    repl_pretty = isatty(STDIN_FILENO);
  init_readline();
  while ((status = loadline(L)) != LOAD_EOF) {
    if (status == LOAD_INTERRUPTED) continue;   /* Ctrl-C at the prompt */
    if (status == LUA_OK)
      status = docall(L, 0, LUA_MULTRET);
    if (status != LUA_OK) {
      report(L, status);
      lua_settop(L, 0);   /* no results: gpu.repl.print only forgets the reports */
    }
    l_print(L);
  }
  lua_settop(L, 0);
  fputc('\n', stdout);
  fflush(stdout);
  close_readline();
  repl_pretty = 0;
  repl_L = NULL;
  progname = oldprogname;
}


/* ===================================================================== */
/* Main                                                                  */
/* ===================================================================== */

/*
** Everything runs here, in protected mode.  Answers true on success; errors
** have been reported by the time it returns false.
*/
static int pmain (lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script;
  int args = collectargs(argv, &script);
  int optlim = (script > 0) ? script : argc;
  luaL_checkversion(L);
  if (args == has_error) {
    print_usage(argv[script]);
    return 0;
  }
  if (args & has_help) {   /* the help replaces everything else */
    print_help();
    lua_pushboolean(L, 1);
    return 1;
  }
  if ((args & has_v) && !(args & has_ver))
    print_version();
  if (args & has_E) {   /* tell the package library to ignore LUA_PATH etc. */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  luaL_requiref(L, "gpu", luaopen_gpu, 1);
  lua_pop(L, 1);
  if (args & has_ver) {
    print_gpu_version(L);
    lua_pushboolean(L, 1);
    return 1;
  }
  createargtable(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (device_name != NULL && set_device(L, device_name) != LUA_OK)
    return 0;
  if (!(args & has_E) && handle_luainit(L) != LUA_OK)
    return 0;
  if (args & has_check) {   /* the report replaces -e, -l, the script and the REPL */
    int passed = 0;
    if (run_check(L, &passed) != LUA_OK) return 0;
    lua_pushboolean(L, passed);
    return 1;
  }
  if (!runargs(L, argv, optlim))
    return 0;
  if (script > 0 && script < argc && handle_script(L, argv + script) != LUA_OK)
    return 0;
  if (args & has_i) {
    print_banner_extra(L);
    doREPL(L);
  }
  else if ((script < 1 || script == argc) && !(args & (has_e | has_v))) {
    if (isatty(STDIN_FILENO)) {
      print_version();
      print_banner_extra(L);
      doREPL(L);
    }
    else
      dofile(L, NULL);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- the state's allocator --------------------------------------------------------------
** Small blocks (1 KiB at most: tables, strings, closures, and gpu's light arrays with their
** bytes) come from free lists by 16-byte class, carved from 64 KiB slabs, and go back to
** them: a Lua object costs a pop and a push instead of malloc and free, which were an
** eighth of a small `a + b` (bench/RESULTS.md). Bigger blocks are malloc's. A block is
** freed by the size Lua gives, so a block malloc made (before the switch, or shrunk into
** the small range) joins the lists at its smaller size: memory stays valid, never freed
** twice. Slabs are kept until the process ends (as malloc keeps most small chunks).
** Under AddressSanitizer the plain allocator stays, so that it sees every block. */
#if defined(__SANITIZE_ADDRESS__)
#define GL_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GL_POOL 0
#endif
#endif
#ifndef GL_POOL
#define GL_POOL 1
#endif

#define POOL_STEP 16
#define POOL_MAX 1024
#define POOL_SLAB ((size_t)64 << 10)

typedef struct pool {
  void *free[POOL_MAX / POOL_STEP];
  char *cur, *end;
} pool;

static void *pool_get(pool *p, size_t n) {
  size_t c = (n + POOL_STEP - 1) / POOL_STEP - 1, sz = (c + 1) * POOL_STEP;
  void *b = p->free[c];
  if (b) { p->free[c] = *(void **)b; return b; }
  if ((size_t)(p->end - p->cur) < sz) {
    char *slab = malloc(POOL_SLAB);
    if (slab == NULL) return NULL;
    p->cur = slab;
    p->end = slab + POOL_SLAB;
  }
  b = p->cur;
  p->cur += sz;
  return b;
}

static void pool_put(pool *p, void *b, size_t n) {
  size_t c = (n + POOL_STEP - 1) / POOL_STEP - 1;
  *(void **)b = p->free[c];
  p->free[c] = b;
}

static void *pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  pool *p = ud;
  size_t old = ptr ? osize : 0;             /* osize is an object kind when ptr is NULL */
  if (nsize == 0) {
    if (ptr == NULL) return NULL;
    if (old > 0 && old <= POOL_MAX) pool_put(p, ptr, old);
    else free(ptr);
    return NULL;
  }
  if (ptr == NULL) return nsize <= POOL_MAX ? pool_get(p, nsize) : malloc(nsize);
  if (old > POOL_MAX && nsize > POOL_MAX) return realloc(ptr, nsize);
  if (nsize <= old) return ptr;             /* shrinking never fails (Lua relies on it) */
  if (old > 0 && (old + POOL_STEP - 1) / POOL_STEP == (nsize + POOL_STEP - 1) / POOL_STEP) return ptr;
  void *n = nsize <= POOL_MAX ? pool_get(p, nsize) : malloc(nsize);
  if (n == NULL) return NULL;
  memcpy(n, ptr, old);
  if (old > 0 && old <= POOL_MAX) pool_put(p, ptr, old);
  else free(ptr);
  return n;
}

int main (int argc, char **argv) {
  int status, result;
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    l_message(argv[0], "cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
#if GL_POOL
  static pool small_blocks;
  lua_setallocf(L, pool_alloc, &small_blocks);
#endif
  lua_gc(L, LUA_GCSTOP);   /* no collection while the state is being built */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  status = lua_pcall(L, 2, 1, 0);
  result = lua_toboolean(L, -1);
  report(L, status);
  lua_close(L);
  return (result && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
