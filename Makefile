# lockwatch - non-recursive Makefile.
#
#   make            build everything into build/
#   make test       install missing packages, build, run unit + integration tests
#   make demo       install missing packages, build, run the demo on a throwaway Redis
#   make bench      the benchmarks in bench/ (figures, never pass/fail)
#   make install    PREFIX=/usr/local DESTDIR=
#   make SANITIZE=address,undefined   build with sanitizers
#   make WERROR=1   warnings are errors (CI sets this)

VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= /etc
UNITDIR    ?= /lib/systemd/system
BUILD      ?= build

CC         ?= cc
PKG_CONFIG ?= pkg-config
PKGS       := hiredis libmicrohttpd inih jansson libcurl libcrypto
TEST_PKGS  := cmocka

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
LDFLAGS  += -pthread
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

DEP_CFLAGS  = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
DEP_LIBS    = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   = $(shell $(PKG_CONFIG) --libs $(TEST_PKGS) 2>/dev/null)

# --- sources -------------------------------------------------------------
CONF_SRC       := $(wildcard conf/*.c)
COLLECTORS_SRC := $(wildcard collectors/*.c collectors/formats/*.c)
AGENT_SRC      := $(filter-out agent/main.c,$(wildcard agent/*.c))
CORE_SRC       := $(CONF_SRC) $(COLLECTORS_SRC) $(AGENT_SRC)
CORE_OBJ       := $(CORE_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

LOCKWATCHD := $(BUILD)/bin/lockwatchd
BINS       := $(LOCKWATCHD)

ALL_OBJ := $(CORE_OBJ) $(BUILD)/agent/main.o $(UNIT_SRC:%.c=$(BUILD)/%.o) \
           $(BENCH_SRC:%.c=$(BUILD)/%.o)

.PHONY: all deps test unit integration demo bench install uninstall clean check-deps
all: $(BINS) $(UNIT_BIN) $(BENCH_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEP_CFLAGS) -c -o $@ $<

$(BUILD)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(DEP_CFLAGS) $(TEST_CFLAGS) -c -o $@ $<

$(BUILD)/liblockwatch-core.a: $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(LOCKWATCHD): $(BUILD)/agent/main.o $(BUILD)/liblockwatch-core.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/liblockwatch-core.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS) $(TEST_LIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/liblockwatch-core.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEP_LIBS)

# --- packages --------------------------------------------------------------
# Debian packages the build, the tests and the demo need.  `make deps`
# installs the missing ones and does nothing when all are there.
DEB_PKGS := gcc make pkg-config libhiredis-dev libmicrohttpd-dev libinih-dev \
            libjansson-dev libcurl4-openssl-dev libssl-dev libcmocka-dev \
            redis-server redis-tools prometheus python3 python3-redis procps

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root, or install:" $$missing >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# --- tests -----------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory all
	@tests/run-all $(BUILD)

unit: all
	@tests/run-all $(BUILD) unit

integration: all
	@tests/run-all $(BUILD) integration

demo: deps
	@$(MAKE) --no-print-directory all
	@tests/demo/run $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run $(BUILD)

# --- install ---------------------------------------------------------------
install: $(BINS)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(SYSCONFDIR)/lockwatch $(DESTDIR)$(UNITDIR)
	install -m 0755 $(LOCKWATCHD) $(DESTDIR)$(PREFIX)/sbin/lockwatchd
	install -m 0640 conf/lockwatch.ini $(DESTDIR)$(SYSCONFDIR)/lockwatch/lockwatch.ini
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	    packaging/systemd/lockwatchd.service > $(DESTDIR)$(UNITDIR)/lockwatchd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/lockwatchd.service

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/lockwatchd $(DESTDIR)$(UNITDIR)/lockwatchd.service

clean:
	rm -rf $(BUILD)

-include $(ALL_OBJ:.o=.d)
