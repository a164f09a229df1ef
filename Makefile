# SPDX-License-Identifier: BSD-3-Clause
# lockwatch - non-recursive Makefile.
#
#   make            build everything into build/
#   make test       install missing packages, build, run unit + integration tests
#                   (TEST_JOBS=N test programs at once, default 6: tests/run-all)
#   make demo       install missing packages, build, run the demo on a throwaway Redis
#   make bench      the benchmarks in bench/ (figures: timing never fails it,
#                   a failing agent or tool does);
#                   make bench-follow runs only follow mode's,
#                   make bench-follow-fullscan issue 29's repro (a full scan during churn),
#                   make bench-reporters the reporters' overhead per CPU placement
#   make soak       SOAK_MINUTES=N (default 120) of steady load on one lockwatchd:
#                   RSS and what it tracks every 30 s to a CSV, then a slow leak or a
#                   plateau (bench/soak/soak.py; figures, a dead agent fails it)
#   make interop    the real clients (Java, Python, Node, Go) against lockwatch (tests/interop/);
#                   make interop-deadlock-soak: 60 s of one-order Redisson fair-lock contention
#   make install    PREFIX=/usr/local DESTDIR=
#   make SANITIZE=address,undefined   build with sanitizers
#   make WERROR=1   warnings are errors (CI sets this)
#   make deps-hiredis-tls   build hiredis 1.2 with TLS once (bookworm has 0.14)
#   make HIREDIS_PREFIX=DIR build against the hiredis under DIR (TLS with 1.x)
#   make fuzz       build the libFuzzer harnesses (fuzz/) with clang and run
#                   each for FUZZ_SECONDS (default 60)

VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= /etc
UNITDIR    ?= /lib/systemd/system
MANDIR     ?= $(PREFIX)/share/man
BUILD      ?= build

CC         ?= cc
PKG_CONFIG ?= pkg-config
PKGS       := hiredis libmicrohttpd inih jansson libcurl libcrypto
TEST_PKGS  := cmocka

# --- hiredis and TLS -----------------------------------------------------------
# hiredis 0.14 (Debian bookworm) or 1.x, found by pkg-config.  With 1.x and
# hiredis_ssl, TLS to Redis (rediss://) is compiled in (LOCKWATCH_TLS);
# otherwise a rediss:// URL is refused with the reason.  HIREDIS_PREFIX=DIR
# builds against a hiredis installed under DIR (e.g. the one `make
# deps-hiredis-tls` builds into HIREDIS_CACHE); the binaries then find its
# libraries through an rpath.  TLS=no builds without TLS whatever hiredis is.
# Objects are rebuilt when the choice changes ($(BUILD)/hiredis.stamp).
# HIREDIS_PKGS is what liblockwatch links: always libcrypto too, for the
# HMAC of signed sample datagrams (openssl brings it with TLS).
HIREDIS_CACHE   ?= /var/cache/lockwatch
HIREDIS_TLS_VERSION ?= 1.2.0
HIREDIS_PREFIX  ?=
ifneq ($(HIREDIS_PREFIX),)
override PKG_CONFIG := env PKG_CONFIG_PATH=$(HIREDIS_PREFIX)/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH)) $(PKG_CONFIG)
HIREDIS_RPATH   := -Wl,-rpath,$(HIREDIS_PREFIX)/lib
endif
HIREDIS_VERSION := $(shell $(PKG_CONFIG) --modversion hiredis 2>/dev/null)
TLS ?= $(if $(and $(filter-out 0,$(firstword $(subst ., ,$(HIREDIS_VERSION)))),\
          $(shell $(PKG_CONFIG) --exists hiredis_ssl && echo y)),yes,no)
ifeq ($(TLS),yes)
PKGS       += hiredis_ssl openssl
CPPFLAGS   += -DLOCKWATCH_TLS=1
HIREDIS_PKGS := hiredis hiredis_ssl openssl
else
HIREDIS_PKGS := hiredis libcrypto
endif
CPPFLAGS   += -DLOCKWATCH_HIREDIS='"$(HIREDIS_VERSION)"'

# --- dependency check --------------------------------------------------------
# A build needs the libraries above (and a compiler).  Without them it stops
# here with one line naming what is missing, rather than at the first
# "jansson.h: No such file".  deps, clean, uninstall, and the goals that run
# deps first (test, demo, deb, bench: their own build is a sub-make, checked
# then) do not need them.  DEB_<pkg-config name> is the Debian package.
DEB_hiredis       := libhiredis-dev
DEB_libmicrohttpd := libmicrohttpd-dev
DEB_inih          := libinih-dev
DEB_jansson       := libjansson-dev
DEB_libcurl       := libcurl4-openssl-dev
DEB_libcrypto     := libssl-dev
DEB_openssl       := libssl-dev
DEB_hiredis_ssl   := libhiredis-dev (1.x, or make deps-hiredis-tls)
DEB_cmocka        := libcmocka-dev
NO_DEPS_GOALS     := deps deps-list deps-hiredis-tls deps-demo deps-test deps-deb deps-fuzz deps-interop \
                     deps-bench clean uninstall test demo deb bench bench-follow \
                     bench-follow-fullscan bench-reporters soak interop interop-deadlock-soak
ifneq ($(filter-out $(NO_DEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
HAVE_CC      := $(shell command -v $(CC) >/dev/null 2>&1 && echo y)
HAVE_PKGCONF := $(shell command -v $(lastword $(PKG_CONFIG)) >/dev/null 2>&1 && echo y)
MISSING_DEPS := $(if $(HAVE_CC),,gcc) $(if $(HAVE_PKGCONF),$(foreach p,$(PKGS) $(TEST_PKGS),\
                  $(if $(shell $(PKG_CONFIG) --exists $(p) && echo y),,$(DEB_$(p)))),pkg-config)
ifneq ($(strip $(MISSING_DEPS)),)
$(error missing $(strip $(MISSING_DEPS)): run `make deps` (as root) to install them)
endif
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wvla -fno-common
ifeq ($(CI),true)
WERROR ?= 1
endif
ifeq ($(WERROR),1)
WARN += -Werror
endif

OPT      ?= -O2 -g
CPPFLAGS += -I. -D_DEFAULT_SOURCE -D_GNU_SOURCE -DLOCKWATCH_VERSION='"$(VERSION)"' \
            -DLOCKWATCH_SYSCONFDIR='"$(SYSCONFDIR)"'
CFLAGS   += -std=c11 $(OPT) $(WARN) -pthread -MMD -MP
LDFLAGS  += -pthread $(HIREDIS_RPATH)
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

DEP_CFLAGS  = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
DEP_LIBS    = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   = $(shell $(PKG_CONFIG) --libs $(TEST_PKGS) 2>/dev/null)

# --- sources -------------------------------------------------------------
# Layers, lowest first (tests/layering checks that no include runs up):
# common/ (includes nothing of the project), conf/, collectors/*/ (redis,
# formats, locks, scan, follow above scan, waits, release: CONTRIBUTING.md),
# alerts/, agent/.  Each layer is a set of folders; a new file or folder in
# one is picked up.
COMMON_SRC     := $(wildcard common/*.c)
CONF_SRC       := $(wildcard conf/*.c)
COLLECTORS_SRC := $(wildcard collectors/*/*.c)
ALERTS_SRC     := $(wildcard alerts/*.c alerts/*/*.c)
AGENT_SRC      := $(filter-out agent/main.c,$(wildcard agent/*.c agent/*/*.c))
CORE_SRC       := $(COMMON_SRC) $(CONF_SRC) $(COLLECTORS_SRC) $(ALERTS_SRC) $(AGENT_SRC)

# Lua scripts live in their own .lua files and are embedded at build time:
# collectors/release/lua/release.lua becomes the NUL-terminated array
# `const char collectors_release_lua_release_lua[]` in $(BUILD)/gen/collectors/release/lua/release.lua.c.
CORE_LUA       := $(wildcard collectors/release/lua/*.lua)
CLIENT_LUA     := $(wildcard client/lua/*.lua)
CORE_OBJ       := $(CORE_SRC:%.c=$(BUILD)/%.o) $(CORE_LUA:%=$(BUILD)/gen/%.o)

# lockctl, the on-call CLI: cli/*.c.  Everything but main.c goes into an
# archive that lockctl and the unit tests link, so a test of table.c or
# session.c links the object instead of compiling the .c in.
CLI_SRC        := $(wildcard cli/*.c)
CLI_OBJ        := $(filter-out $(BUILD)/cli/main.o,$(CLI_SRC:%.c=$(BUILD)/%.o))
LIBLOCKCTL     := $(if $(CLI_SRC),$(BUILD)/liblockctl.a)
LOCKCTL        := $(if $(CLI_SRC),$(BUILD)/bin/lockctl)

# liblockwatch: the client library (client/*.c), built position-independent
# with hidden visibility; only the lw_ API in client/lockwatch.h is exported.
CLIENT_SRC := $(wildcard client/*.c)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(BUILD)/pic/%.o) $(CLIENT_LUA:%=$(BUILD)/pic/gen/%.o)
LIBLW_A    := $(BUILD)/lib/liblockwatch.a
LIBLW_SO   := $(BUILD)/lib/liblockwatch.so.0
LIBLW      := $(if $(CLIENT_SRC),$(LIBLW_A) $(LIBLW_SO) $(BUILD)/lib/lockwatch.pc)
EXAMPLE_SRC := $(wildcard client/examples/*.c)
EXAMPLE_BIN := $(EXAMPLE_SRC:client/examples/%.c=$(BUILD)/examples/%)

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# C programs driven by the Python integration tests (real Redis, real agent)
ITEST_SRC := $(wildcard tests/integration/*.c)
ITEST_BIN := $(ITEST_SRC:tests/integration/%.c=$(BUILD)/itests/%)

BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

# Man pages: packaging/man/*.[1-8], installed into man1..man8.  The OPTIONS
# of lockwatch.ini.5 come from the option table through gen_ini5.
MAN_PAGES := $(wildcard packaging/man/*.[1-8])
GEN_INI5  := $(BUILD)/tools/gen_ini5

LOCKWATCHD := $(BUILD)/bin/lockwatchd
BINS       := $(LOCKWATCHD) $(LOCKCTL)

ALL_OBJ := $(CORE_OBJ) $(CLI_SRC:%.c=$(BUILD)/%.o) $(BUILD)/agent/main.o $(UNIT_SRC:%.c=$(BUILD)/%.o) \
           $(BENCH_SRC:%.c=$(BUILD)/%.o) $(CLIENT_OBJ) $(EXAMPLE_SRC:%.c=$(BUILD)/%.o) \
           $(ITEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/packaging/man/gen_ini5.o \
           $(BUILD)/tests/unit/failalloc.o

# A recipe that fails leaves no half-written target behind; generated files
# are written to $@.tmp and renamed, so an interrupted build leaves none either.
.DELETE_ON_ERROR:

.PHONY: all deps test unit integration demo bench bench-follow bench-follow-fullscan bench-reporters soak install \
        uninstall clean deb man torture deps-hiredis-tls interop interop-deadlock-soak
all: $(BINS) $(LIBLW) $(EXAMPLE_BIN) $(UNIT_BIN) $(ITEST_BIN) $(BENCH_BIN) $(GEN_INI5)

# Which hiredis and whether TLS: rewritten only when that changes, so that
# switching HIREDIS_PREFIX or TLS rebuilds every object.
HIREDIS_STAMP := $(BUILD)/hiredis.stamp
HIREDIS_SAYS  := $(HIREDIS_VERSION) tls=$(TLS) $(HIREDIS_PREFIX)
ifneq ($(filter-out $(NO_DEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
ifneq ($(shell cat $(HIREDIS_STAMP) 2>/dev/null),$(strip $(HIREDIS_SAYS)))
$(shell mkdir -p $(BUILD) && echo '$(strip $(HIREDIS_SAYS))' > $(HIREDIS_STAMP))
endif
endif

$(BUILD)/%.o: %.c $(HIREDIS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEP_CFLAGS) -c -o $@ $<

$(BUILD)/tests/unit/%.o: tests/unit/%.c $(HIREDIS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEP_CFLAGS) $(TEST_CFLAGS) -c -o $@ $<

$(BUILD)/gen/%.lua.c: %.lua
	@mkdir -p $(@D)
	{ printf '/* generated from %s by the Makefile; do not edit */\n' '$<'; \
	  printf 'extern const char %s[];\nconst char %s[] = {\n' \
	         '$(subst /,_,$(subst .,_,$<))' '$(subst /,_,$(subst .,_,$<))'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  printf '0x00\n};\n'; } > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/%.lua.o: $(BUILD)/gen/%.lua.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/pic/gen/%.lua.o: $(BUILD)/gen/%.lua.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/pic/%.o: %.c $(HIREDIS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden $(shell $(PKG_CONFIG) --cflags $(HIREDIS_PKGS)) -c -o $@ $<

$(LIBLW_A): $(CLIENT_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

$(LIBLW_SO): $(CLIENT_OBJ)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,liblockwatch.so.0 -o $@ $^ $(shell $(PKG_CONFIG) --libs $(HIREDIS_PKGS))
	ln -sf liblockwatch.so.0 $(BUILD)/lib/liblockwatch.so

# Written again whenever its text would change (PREFIX given to `make
# install` after a `make` without it): checked on every run, replaced only
# when it differs, so nothing that depends on it rebuilds for nothing.
$(BUILD)/lib/lockwatch.pc: client/lockwatch.pc.in $(HIREDIS_STAMP) pc-always
	@mkdir -p $(@D)
	@sed 's|@PREFIX@|$(PREFIX)|g; s|@VERSION@|$(VERSION)|g; s|@REQUIRES@|$(HIREDIS_PKGS)|g' $< > $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@ && echo "wrote $@ (prefix $(PREFIX))"; fi

.PHONY: pc-always
pc-always:

# Examples and integration drivers see the client only as users do:
# #include <lockwatch.h>.
$(BUILD)/client/examples/%.o: client/examples/%.c $(HIREDIS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iclient $(CFLAGS) $(DEP_CFLAGS) -c -o $@ $<

$(BUILD)/tests/integration/%.o: tests/integration/%.c $(HIREDIS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iclient $(CFLAGS) $(DEP_CFLAGS) -c -o $@ $<

$(BUILD)/examples/%: $(BUILD)/client/examples/%.o $(LIBLW_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs $(HIREDIS_PKGS))

$(BUILD)/itests/%: $(BUILD)/tests/integration/%.o $(BUILD)/liblockwatch-core.a $(LIBLW_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

$(BUILD)/liblockwatch-core.a: $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# lockwatchd links liblockwatch (agent/leader.c, through client/lockwatch.h
# alone: CONTRIBUTING.md "The layers").
$(LOCKWATCHD): $(BUILD)/agent/main.o $(BUILD)/liblockwatch-core.a $(LIBLW_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

$(BUILD)/liblockctl.a: $(CLI_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/bin/lockctl: $(BUILD)/cli/main.o $(LIBLOCKCTL) $(BUILD)/liblockwatch-core.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

# liblockctl.a before the core archive: its objects call into the core.
$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIBLOCKCTL) $(BUILD)/liblockwatch-core.a $(LIBLW_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS) $(TEST_LIBS)

# test_agent and test_alerts fail allocations in turn: in those binaries
# alone the linker sends the project's malloc/calloc/realloc/strdup calls to
# the wrappers of tests/unit/failalloc.c.
FAILALLOC_TESTS := $(BUILD)/tests/test_agent $(BUILD)/tests/test_alerts
$(FAILALLOC_TESTS): private LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup
$(FAILALLOC_TESTS): $(BUILD)/tests/unit/failalloc.o

$(GEN_INI5): $(BUILD)/packaging/man/gen_ini5.o $(BUILD)/liblockwatch-core.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

# After changing conf/options.c: rewrite the generated OPTIONS of
# lockwatch.ini.5 (tests/integration/test_man.py fails until it is done).
man: $(GEN_INI5)
	$(GEN_INI5) -w packaging/man/lockwatch.ini.5

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/liblockwatch-core.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

# --- packages --------------------------------------------------------------
# Debian packages by what needs them: each goal installs its groups only, so
# `make demo` brings no JDK, Go, Node, Chromium or Prometheus (tests/static/
# test_make_deps_groups.sh simulates the installs with apt-get -s).
#   build      compile and link (every goal that builds)
#   demo       the demo's throwaway redis-server and its Python workload
#   test       the unit and integration tests (make test): redis, Python, the
#              man-page, packaging and TLS tools, Chromium for the status
#              page's screenshot test, promtool/Prometheus/Alertmanager for
#              the tests that run them
#   deb        make deb (and deps-hiredis-tls: dpkg-source)
#   fuzz       make fuzz: clang and its sanitizer runtimes
#   bench      make bench: the demo's packages and GNU time
#   interop    make interop: the real clients' toolchains (JDK, Maven, Go,
#              Node; npm below)
# `make deps` installs every group; `make deps DEPS_GROUPS="build demo"`
# only those.
DEB_GROUP_build   := gcc make pkg-config libhiredis-dev libmicrohttpd-dev libinih-dev \
                     libjansson-dev libcurl4-openssl-dev libssl-dev libcmocka-dev
DEB_GROUP_demo    := redis-server redis-tools python3 python3-redis procps
DEB_GROUP_test    := $(DEB_GROUP_demo) time man-db groff-base debhelper dpkg-dev openssl \
                     chromium prometheus prometheus-alertmanager python3-yaml
DEB_GROUP_deb     := debhelper dpkg-dev
DEB_GROUP_fuzz    := clang libclang-rt-14-dev
DEB_GROUP_interop := $(DEB_GROUP_demo) openjdk-17-jdk-headless maven python3-venv nodejs golang-go
DEB_GROUP_bench   := $(DEB_GROUP_demo) time
DEPS_GROUPS       ?= build demo test deb fuzz interop
DEB_PKGS          := $(sort $(foreach g,$(DEPS_GROUPS),$(DEB_GROUP_$(g))))
# A dpkg lock held by another apt run (unattended-upgrades, a parallel job)
# is waited for up to DPKG_LOCK_WAIT seconds (apt >= 1.9.11: bookworm's 2.6
# has DPkg::Lock::Timeout) rather than failing at once; apt-get update,
# whose lists lock that option may not cover, is tried again every 20 s,
# 6 times.  A failure after that ends with APT_LOCK_HINT.
DPKG_LOCK_WAIT    ?= 120
APT_GET           := DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=$(DPKG_LOCK_WAIT)
APT_LOCK_HINT     := make deps: apt-get failed. If another apt or dpkg run holds its lock \
                     (ps -C apt-get,apt,dpkg,unattended-upgr shows it), wait for it to end and \
                     run make again; DPKG_LOCK_WAIT=SECONDS waits longer (now $(DPKG_LOCK_WAIT))

# hiredis with TLS: Debian bookworm's libhiredis-dev is 0.14 (no TLS).  A
# distribution with hiredis >= 1.0 and its hiredis_ssl (libhiredis-dev on
# trixie, Ubuntu 22.04+) needs nothing more: TLS is compiled in.  On
# bookworm, `make deps-hiredis-tls` (or `make deps HIREDIS_TLS=yes`) builds
# Debian trixie's hiredis $(HIREDIS_TLS_VERSION) source package with USE_SSL=1 into
# $(HIREDIS_CACHE)/hiredis-$(HIREDIS_TLS_VERSION)/prefix once (packaging/hiredis-tls: a
# private apt source list, the system's apt sources untouched, checksums
# checked against the signed index and the .dsc); then build with
# `make HIREDIS_PREFIX=$(HIREDIS_CACHE)/hiredis-$(HIREDIS_TLS_VERSION)/prefix`.
deps-hiredis-tls:
	@$(MAKE) --no-print-directory deps DEPS_GROUPS="build deb" HIREDIS_TLS=no
	@HIREDIS_TLS_VERSION=$(HIREDIS_TLS_VERSION) packaging/hiredis-tls $(HIREDIS_CACHE) >/dev/null

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps ($(strip $(DEPS_GROUPS))): installing" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root, or install:" $$missing >&2; exit 1; fi; \
	  apt_update() { n=0; until $(APT_GET) update -qq; do n=$$((n + 1)); [ $$n -lt 6 ] || return 1; \
	    echo "make deps: apt-get update failed (another apt run may hold its lock); again in 20 s" >&2; \
	    sleep 20; done; }; \
	  { apt_update && $(APT_GET) install -y -qq --no-install-recommends $$missing; } || \
	  { echo "$(APT_LOCK_HINT)" >&2; exit 1; }; \
	fi
	@# npm (interop only): Debian's package, unless a nodejs that ships its own npm is there
	$(if $(filter interop,$(DEPS_GROUPS)),@command -v npm >/dev/null 2>&1 || { echo "make deps: installing npm"; \
	  $(APT_GET) install -y -qq --no-install-recommends npm || { echo "$(APT_LOCK_HINT)" >&2; exit 1; }; })
	$(if $(filter yes,$(HIREDIS_TLS)),@$(MAKE) --no-print-directory deps-hiredis-tls)

# The package list of DEPS_GROUPS, one line (tests/static/test_make_deps_groups.sh).
.PHONY: deps-list
deps-list:
	@echo $(DEB_PKGS)

# Each goal's own packages: deps with its groups only.
.PHONY: deps-demo deps-test deps-deb deps-fuzz deps-interop deps-bench
deps-demo deps-test deps-deb deps-fuzz deps-interop deps-bench:
	@$(MAKE) --no-print-directory deps DEPS_GROUPS="build $(@:deps-%=%)"

# --- Debian packages -------------------------------------------------------
# lockwatch, liblockwatch0 and liblockwatch-dev in $(BUILD)/deb/, built from
# a clean copy of the committed tree (packaging/deb-build).
deb: deps-deb
	packaging/deb-build $(BUILD)/deb

# --- tests -----------------------------------------------------------------
test: deps-test
	@$(MAKE) --no-print-directory all
	@tests/run-all $(BUILD)

unit: all
	@tests/run-all $(BUILD) unit

integration: all
	@tests/run-all $(BUILD) integration

# liblockwatch under random faults for TORTURE_SECONDS (paused holders,
# paused and restarted Redis, short timeouts; tests/integration/
# client_torture.c): prints its seed and figures, fails when a count that
# must be 0 is not.  TORTURE_ARGS="--seed N" replays a run.
TORTURE_SECONDS ?= 60
torture: all
	@$(BUILD)/itests/client_torture --seconds $(TORTURE_SECONDS) $(TORTURE_ARGS)

# The real clients in their own languages (tests/interop/README.md):
# fetches the pinned versions into $(BUILD)/interop/ (caches there too),
# then runs every scenario against a throwaway redis-server, then the
# reporters' tests (tests/interop/reporters/run).
interop: deps-interop
	@$(MAKE) --no-print-directory all
	@tests/interop/fetch $(BUILD)/interop
	@LOCKWATCH_BUILD=$(abspath $(BUILD)) LOCKWATCH_INTEROP_DIR=$(abspath $(BUILD))/interop \
	  /usr/bin/python3 tests/interop/runner.py
	@LOCKWATCH_BUILD=$(abspath $(BUILD)) LOCKWATCH_INTEROP_DIR=$(abspath $(BUILD))/interop \
	  tests/interop/reporters/run

# The issue's full 60 s of one-order fair-lock contention (make interop runs
# 15 s of it to keep to its budget; tests/interop/deadlocks.py).
interop-deadlock-soak: deps-interop
	@$(MAKE) --no-print-directory all
	@tests/interop/fetch $(BUILD)/interop
	@LOCKWATCH_BUILD=$(abspath $(BUILD)) LOCKWATCH_INTEROP_DIR=$(abspath $(BUILD))/interop \
	  LOCKWATCH_DEADLOCK_SOAK=60 /usr/bin/python3 tests/interop/runner.py --only deadlock,one-order

# The reporters' overhead against the bare libraries (issue 25's 5%;
# docs/reporters.md "Overhead"): bench/reporters/run (Java, Go) and
# bench/reporters/python-node (Python, Node) in each CPU placement of
# REPORTER_PINS (`unpinned`, `apart`, `sidecar`, `same`; about 2 minutes
# each), after building the reporters and their pinned libraries.
REPORTER_PINS ?= unpinned apart sidecar same
bench-reporters: deps-interop
	@$(MAKE) --no-print-directory all
	@for p in $(REPORTER_PINS); do case $$p in unpinned|apart|sidecar|same) ;; \
	  *) echo "REPORTER_PINS: $$p is not unpinned, apart, sidecar or same" >&2; exit 2 ;; esac; done
	@for l in java go python node; do \
	  tests/interop/reporters/$$l/fetch $(BUILD)/interop/reporters/$$l >/dev/null || exit 1; done
	@for p in $(REPORTER_PINS); do \
	  case $$p in unpinned) pin= ;; *) pin="--pin $$p" ;; esac; \
	  echo "== $$p"; \
	  LOCKWATCH_BUILD=$(abspath $(BUILD)) LOCKWATCH_INTEROP_DIR=$(abspath $(BUILD))/interop \
	    bench/reporters/run $$pin || exit 1; \
	  bench/reporters/python-node $(BUILD) $$pin || exit 1; done

demo: deps-demo
	@$(MAKE) --no-print-directory $(BINS)
	@tests/demo/run $(BUILD)

# Five benchmark drivers, each printing figures and ratios (timing is never
# pass/fail; an agent that crashes or exits non-zero, or a tool that fails,
# ends the run with exit 1): the scan (floor, memory, gentleness), sample ingest, the
# client library (acquire/release rate, handoff latency), a cluster scan
# against its shards' floors, and follow mode against scanning.
bench: deps-bench
	@$(MAKE) --no-print-directory all
	@bench/run $(BUILD)
	@bench/ingest $(BUILD)
	@bench/client $(BUILD)
	@bench/cluster $(BUILD)
	@bench/follow $(BUILD)

# Follow mode against scanning (issue 15's figures; ~10 minutes).
bench-follow: deps-bench
	@$(MAKE) --no-print-directory all
	@bench/follow $(BUILD)

# Issue 29's repro at its size: a full scan during churn on 2M keys, the
# agent's lock keys against Redis's (~2 minutes).
bench-follow-fullscan: deps-bench
	@$(MAKE) --no-print-directory all
	@bench/follow $(BUILD) --part fullscan

# Hours of steady load (lock churn on a scanned and a followed target, signed
# samples, API reads, reloads, redis restarts) at nice 19: lockwatchd's RSS
# every 30 s to a CSV, then its slope, a slow leak or a plateau.
SOAK_MINUTES ?= 120
soak: deps-bench
	@$(MAKE) --no-print-directory all
	@LOCKWATCH_BUILD=$(abspath $(BUILD)) bench/soak/soak.py --minutes $(SOAK_MINUTES)

# --- fuzzing -----------------------------------------------------------------
# One libFuzzer harness per fuzz/fuzz_<name>.c, seeded from
# fuzz/corpus/<name>/.  The project's sources are compiled again with clang
# into $(FUZZ_BUILD) (coverage-instrumented, ASan + UBSan, every UBSan
# report fatal) and linked into each harness; the gcc build is untouched.
# fuzz/run runs each harness for FUZZ_SECONDS and prints one line per
# harness; any finding fails it (CI: .ci/run, FUZZ_SEED=1 and FUZZ_RUNS=fixed (fuzz/<name>.runs),
# a fixed budget; unset, each run explores afresh).  A finding's input is
# kept: replay it with build/fuzz/bin/fuzz_<name> INPUT.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -O1 -g $(WARN) -pthread -MMD -MP $(FUZZ_SAN)
FUZZ_SRC     := $(wildcard fuzz/fuzz_*.c)
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_BUILD)/bin/%)
FUZZ_CORE    := $(CORE_SRC:%.c=$(FUZZ_BUILD)/%.o) $(CORE_LUA:%=$(FUZZ_BUILD)/gen/%.o)

.PHONY: fuzz fuzz-build
fuzz: deps-fuzz
	@$(MAKE) --no-print-directory fuzz-build
	@fuzz/run $(FUZZ_BUILD)/bin $(FUZZ_SECONDS)

fuzz-build: $(FUZZ_BIN)

# the harness objects are intermediates of a pattern rule: keep them
.SECONDARY: $(FUZZ_SRC:%.c=$(FUZZ_BUILD)/%.o)

$(FUZZ_BUILD)/gen/%.lua.o: $(BUILD)/gen/%.lua.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(DEP_CFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/libcore.a: $(FUZZ_CORE)
	@rm -f $@
	$(AR) rcs $@ $^

# liblockwatch (gcc-built, not instrumented): the agent's leader election
# (agent/leader.c) calls it, and fuzz_render links the agent's view.
$(FUZZ_BUILD)/bin/%: $(FUZZ_BUILD)/fuzz/%.o $(FUZZ_BUILD)/libcore.a $(LIBLW_A)
	@mkdir -p $(@D)
	$(FUZZ_CC) -pthread $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(DEP_LIBS)

-include $(FUZZ_CORE:.o=.d) $(FUZZ_SRC:%.c=$(FUZZ_BUILD)/%.d)

# --- install ---------------------------------------------------------------
# The unit runs lockwatchd as the system user "lockwatch", which may read
# the config (root:lockwatch 0640).  On a real install (no DESTDIR) the user
# is created when missing; a package does that in its postinst instead.
install: $(BINS) $(LIBLW)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(SYSCONFDIR)/lockwatch $(DESTDIR)$(UNITDIR)
	install -m 0755 $(LOCKWATCHD) $(DESTDIR)$(PREFIX)/sbin/lockwatchd
	$(if $(LOCKCTL),install -d $(DESTDIR)$(PREFIX)/bin)
	$(if $(LOCKCTL),install -m 0755 $(LOCKCTL) $(DESTDIR)$(PREFIX)/bin/lockctl)
	if [ -z "$(DESTDIR)" ] && ! getent passwd lockwatch >/dev/null; then \
	    useradd --system --no-create-home --home-dir /nonexistent \
	            --shell /usr/sbin/nologin lockwatch; fi
	$(if $(CLIENT_SRC),install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig)
	$(if $(CLIENT_SRC),install -m 0644 client/lockwatch.h $(DESTDIR)$(PREFIX)/include/lockwatch.h)
	$(if $(CLIENT_SRC),install -m 0644 $(LIBLW_A) $(DESTDIR)$(PREFIX)/lib/liblockwatch.a)
	$(if $(CLIENT_SRC),install -m 0755 $(LIBLW_SO) $(DESTDIR)$(PREFIX)/lib/liblockwatch.so.0)
	$(if $(CLIENT_SRC),ln -sf liblockwatch.so.0 $(DESTDIR)$(PREFIX)/lib/liblockwatch.so)
	$(if $(CLIENT_SRC),install -m 0644 $(BUILD)/lib/lockwatch.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/lockwatch.pc)
	if [ ! -e $(DESTDIR)$(SYSCONFDIR)/lockwatch/lockwatch.ini ]; then \
	    install -m 0640 conf/lockwatch.ini $(DESTDIR)$(SYSCONFDIR)/lockwatch/lockwatch.ini; \
	    if [ -z "$(DESTDIR)" ]; then chgrp lockwatch $(SYSCONFDIR)/lockwatch/lockwatch.ini; fi; \
	fi
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	    packaging/systemd/lockwatchd.service > $(DESTDIR)$(UNITDIR)/lockwatchd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/lockwatchd.service
	for page in $(MAN_PAGES); do \
	    s=$${page##*.}; install -d $(DESTDIR)$(MANDIR)/man$$s && \
	    install -m 0644 $$page $(DESTDIR)$(MANDIR)/man$$s/; done

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/lockwatchd $(DESTDIR)$(UNITDIR)/lockwatchd.service
	rm -f $(DESTDIR)$(PREFIX)/bin/lockctl
	for page in $(notdir $(MAN_PAGES)); do rm -f $(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; done
	rm -f $(DESTDIR)$(PREFIX)/include/lockwatch.h $(DESTDIR)$(PREFIX)/lib/liblockwatch.a \
	      $(DESTDIR)$(PREFIX)/lib/liblockwatch.so.0 $(DESTDIR)$(PREFIX)/lib/liblockwatch.so \
	      $(DESTDIR)$(PREFIX)/lib/pkgconfig/lockwatch.pc

clean:
	rm -rf $(BUILD)

-include $(ALL_OBJ:.o=.d)
