/* config.c: the recorder's configuration: the MATE_* variables and the identity that
 * prefixes them, applying a configuration, warnings, and what a fork changes (the log's
 * destination is logdest.c's). */
#include "recorder_private.h"
#include "logfile.h"
#include "events_private.h"
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int mate_record_level_ = -1;
struct rec_config mate_rec_cfg;
unsigned mate_rec_generation;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pid_t cached_pid;
static int once_flags[REC_ONCE_COUNT];
static int dump_stopped;

/* ---- warnings ----------------------------------------------------------------- */

void
mate_rec_warn_once(enum rec_once which, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(&once_flags[which], 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	mate_vwarn(fmt, ap);
	va_end(ap);
}

void
mate_rec_dump_stop(void)
{
	__atomic_store_n(&dump_stopped, 1, __ATOMIC_RELAXED);
}

int
mate_rec_dump_stopped(void)
{
	return __atomic_load_n(&dump_stopped, __ATOMIC_RELAXED);
}

pid_t
mate_rec_pid(void)
{
	return cached_pid;
}

/* ---- identity: the variables' prefix and the log's name ------------------------ */

/* mate's own, or the library's set by mate_set_identity() / MATE_IDENTITY. */
static struct {
	char prefix[32];     /* PREFIX of PREFIX_LOGLEVEL, ... */
	char name[32];       /* NAME of "NAME API Call" */
	char dumps[48];      /* the default dump folder: "name_dumps" */
	int flashinfer;      /* FlashInfer's text: no va_range line */
} ident = { "MATE", "MATE", "mate_dumps", 0 };

const char *
mate_rec_prefix(void)
{
	return ident.prefix;
}

const char *
mate_rec_name(void)
{
	return ident.name;
}

int
mate_rec_flashinfer_text(void)
{
	return ident.flashinfer;
}

/* getenv() of PREFIX_suffix. */
const char *
mate_rec_getenv(const char *suffix)
{
	char var[96];

	snprintf(var, sizeof(var), "%s_%s", ident.prefix, suffix);
	return getenv(var);
}

/* Checks and takes an identity; NULL, NULL is mate's own. */
static int
set_identity(const char *prefix, const char *name, mate_error *err)
{
	size_t np, nn;

	if (prefix == NULL && name == NULL)
		prefix = name = "MATE";
	if (prefix == NULL || (np = strlen(prefix)) == 0 || np >= sizeof(ident.prefix) ||
	    strspn(prefix, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != np)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "identity prefix '%s': 1 to 31 of A-Z, 0-9 and _", prefix ? prefix : "(null)");
	if (name == NULL)
		name = prefix;
	nn = strlen(name);
	if (nn == 0 || nn >= sizeof(ident.name))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "identity name: 1 to 31 characters");
	for (size_t i = 0; i < nn; i++)
		if (!isprint((unsigned char)name[i]))
			return mate_set_error(err, MATE_ERR_ARGUMENT,
			    "identity name: printable characters only");
	memcpy(ident.prefix, prefix, np + 1);
	memcpy(ident.name, name, nn + 1);
	for (size_t i = 0; i < nn; i++)
		ident.dumps[i] = (char)tolower((unsigned char)name[i]);
	memcpy(ident.dumps + nn, "_dumps", sizeof("_dumps"));
	ident.flashinfer = strcmp(prefix, "FLASHINFER") == 0;
	return MATE_OK;
}

/* MATE_IDENTITY=PREFIX[:NAME], read once before the first configuration. */
static void
identity_from_env(void)
{
	const char *s = getenv("MATE_IDENTITY");
	char buf[96], *colon;
	mate_error err;

	if (s == NULL || s[0] == '\0')
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	if ((colon = strchr(buf, ':')) != NULL)
		*colon++ = '\0';
	mate_error_clear(&err);
	if (strlen(s) >= sizeof(buf) || set_identity(buf, colon, &err) != MATE_OK)
		mate_warn("bad MATE_IDENTITY value '%s' (%s); recording as mate", s,
		    err.message[0] ? err.message : "too long");
}

static const char *trim(const char *s, size_t *len);

const char *
mate_dump_dir_default(char *buf, size_t cap)
{
	const char *s = getenv("MATE_IDENTITY"), *d;
	char prefix[32] = "MATE", name[32] = "MATE", var[64];
	size_t n;

	if (buf == NULL || cap == 0)
		return NULL;
	if (s != NULL && s[0] != '\0') {
		const char *colon = strchr(s, ':');
		size_t np = colon != NULL ? (size_t)(colon - s) : strlen(s);
		size_t nn = colon != NULL ? strlen(colon + 1) : np;
		/* the rules of set_identity(): a bad value records as mate */
		if (np > 0 && np < sizeof(prefix) && nn > 0 && nn < sizeof(name) &&
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == np) {
			memcpy(prefix, s, np);
			prefix[np] = '\0';
			memcpy(name, colon != NULL ? colon + 1 : s, nn);
			name[nn] = '\0';
		}
	}
	snprintf(var, sizeof(var), "%s_DUMP_DIR", prefix);
	if ((d = getenv(var)) != NULL && (trim(d, &n), n > 0)) {
		snprintf(buf, cap, "%s", d);
		return buf;
	}
	for (n = 0; name[n] != '\0' && n + 1 < cap; n++)
		buf[n] = (char)tolower((unsigned char)name[n]);
	snprintf(buf + n, cap - n, "_dumps");
	return buf;
}

/* ---- parsing the environment --------------------------------------------------- */

static const char *
trim(const char *s, size_t *len)
{
	size_t n = strlen(s);

	while (n > 0 && isspace((unsigned char)*s))
		s++, n--;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	*len = n;
	return s;
}

/* Python's int(): optional sign, decimal digits, single '_' between digits. */
static int
parse_int(const char *s, int64_t *out)
{
	size_t n;
	const char *p = trim(s, &n), *end = p + n;
	int neg = 0, digits = 0;
	uint64_t v = 0;

	if (p < end && (*p == '+' || *p == '-'))
		neg = *p++ == '-';
	for (; p < end; p++) {
		if (*p == '_' && digits > 0 && p + 1 < end && isdigit((unsigned char)p[1]))
			continue;
		if (!isdigit((unsigned char)*p) || v > (uint64_t)INT64_MAX / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > (uint64_t)INT64_MAX)
			return -1;
		digits++;
	}
	if (digits == 0)
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/* Python's float() on the usual spellings; locale-independent. */
static int
parse_float(const char *s, double *out)
{
	locale_t c_locale = mate_locale(MATE_LOCALE_C);
	char tmp[128], *end;
	size_t n;
	const char *p = trim(s, &n);

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	if (c_locale == (locale_t)0)
		return -1;
	errno = 0;
	*out = strtod_l(tmp, &end, c_locale);
	if (*end != '\0' || (errno == ERANGE && *out != 0 && !isinf(*out)))
		return -1;
	return 0;
}

/* var: the variable's name after the prefix ("LOGLEVEL"). */
static void
bad_value(const char *var, const char *value, const char *why, const char *dflt)
{
	mate_warn("bad %s_%s value '%s' (%s); using the default %s", ident.prefix, var, value,
	    why, dflt);
}

void
mate_config_default(struct mate_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->level = 0;
	cfg->logdest = "stdout";
	cfg->dump_dir = ident.dumps;
	cfg->dump_max_size_gb = 20;
	cfg->dump_max_count = 1000;
	cfg->dump_include = "";
	cfg->dump_exclude = "";
	cfg->dump_safetensors = 0;
}

static void
env_level(struct mate_config *cfg)
{
	const char *s = mate_rec_getenv("LOGLEVEL");
	int64_t v;

	if (s == NULL)
		return;
	if (parse_int(s, &v) != 0)
		bad_value("LOGLEVEL", s, "not an integer", "0");
	else if (v < 0)
		bad_value("LOGLEVEL", s, "negative", "0");
	else
		cfg->level = v > 10 ? 10 : (int)v;
}

static void
env_dump(struct mate_config *cfg)
{
	const char *s;
	double d;
	int64_t v;

	if ((s = mate_rec_getenv("DUMP_DIR")) != NULL) {
		size_t n;
		trim(s, &n);
		if (n == 0)
			bad_value("DUMP_DIR", s, "empty", ident.dumps);
		else
			cfg->dump_dir = s;
	}
	if ((s = mate_rec_getenv("DUMP_MAX_SIZE_GB")) != NULL) {
		if (parse_float(s, &d) != 0 || isnan(d))
			bad_value("DUMP_MAX_SIZE_GB", s, "not a number", "20");
		else if (d < 0)
			bad_value("DUMP_MAX_SIZE_GB", s, "negative", "20");
		else
			cfg->dump_max_size_gb = d;
	}
	if ((s = mate_rec_getenv("DUMP_MAX_COUNT")) != NULL) {
		if (parse_int(s, &v) != 0)
			bad_value("DUMP_MAX_COUNT", s, "not an integer", "1000");
		else if (v < 0)
			bad_value("DUMP_MAX_COUNT", s, "negative", "1000");
		else
			cfg->dump_max_count = v;
	}
	if ((s = mate_rec_getenv("DUMP_INCLUDE")) != NULL)
		cfg->dump_include = s;
	if ((s = mate_rec_getenv("DUMP_EXCLUDE")) != NULL)
		cfg->dump_exclude = s;
	if ((s = mate_rec_getenv("DUMP_SAFETENSORS")) != NULL) {
		if (strcmp(s, "1") == 0)
			cfg->dump_safetensors = 1;
		else if (strcmp(s, "0") != 0 && s[0] != '\0')
			bad_value("DUMP_SAFETENSORS", s, "only 1 selects safetensors, 0 .pt", "0");
	}
}

void
mate_config_from_env(struct mate_config *cfg)
{
	const char *s;

	mate_config_default(cfg);
	env_level(cfg);
	if (cfg->level < 1)
		return;
	if ((s = mate_rec_getenv("LOGDEST")) != NULL) {
		if (s[0] == '\0')
			bad_value("LOGDEST", s, "empty", "stdout");
		else
			cfg->logdest = s;
	}
	if ((s = getenv("MATE_INSTRUCTION_LOG")) != NULL && s[0] != '\0')
		cfg->instruction_log = s;
	if ((s = mate_rec_getenv("PROFILE")) != NULL && s[0] != '\0')
		cfg->profile = s;
	if ((s = mate_rec_getenv("BENCH_LOG")) != NULL && s[0] != '\0')
		cfg->bench_log = s;
	if ((s = getenv("MATE_MONITOR")) != NULL && s[0] != '\0')
		cfg->monitor = s;
	if (cfg->level >= 10)
		env_dump(cfg);
}

/* ---- applying a configuration ------------------------------------------------------ */

/* "./x" and "x/" as pathlib prints them: "x". */
static char *
normalize_dir(const char *d)
{
	size_t n;
	char *s;

	while (d[0] == '.' && d[1] == '/' && d[2] != '\0')
		for (d += 2; *d == '/' && d[1] != '\0'; d++)
			;
	s = strdup(d);
	if (s == NULL)
		return NULL;
	n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

static char *
shown_dir(const char *d)
{
	size_t n = strlen(d) + 3;
	char *s = malloc(n);

	if (s == NULL)
		return NULL;
	if (d[0] == '/' || strncmp(d, "./", 2) == 0 || strncmp(d, "../", 3) == 0 ||
	    strcmp(d, ".") == 0 || strcmp(d, "..") == 0)
		snprintf(s, n, "%s", d);
	else
		snprintf(s, n, "./%s", d);
	return s;
}

static void
release_config(struct rec_config *c)
{
	free(c->logdest);
	free(c->dump_dir);
	free(c->dump_dir_shown);
	mate_patterns_free(&c->include);
	mate_patterns_free(&c->exclude);
	memset(c, 0, sizeof(*c));
}

static int
effective_level(int level)
{
	if (level >= 10)
		return 10;
	if (level >= 5)
		return 5;
	if (level >= 3)
		return 3;
	return level >= 1 ? 1 : 0;
}

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

/* PREFIX_LOG_EXTRA, read at each configuration: 1 adds mate's own lines to
 * the peers' log text (call ids and threads, in-place tensors after the
 * call); 0 or unset: the peers' text byte for byte. */
static int
log_extra_from_env(void)
{
	const char *s = mate_rec_getenv("LOG_EXTRA");

	if (s == NULL || s[0] == '\0' || strcmp(s, "0") == 0)
		return 0;
	if (strcmp(s, "1") == 0)
		return 1;
	bad_value("LOG_EXTRA", s, "1 adds call ids, threads and in-place tensors after the call", "0");
	return 0;
}

static int
apply(const struct mate_config *cfg, mate_error *err)
{
	static int atfork_done;
	struct rec_config n;
	double bytes;

	memset(&n, 0, sizeof(n));
	n.level = effective_level(cfg->level);
	n.logdest = strdup(cfg->logdest ? cfg->logdest : "stdout");
	n.dump_dir = normalize_dir(cfg->dump_dir ? cfg->dump_dir : ident.dumps);
	n.dump_dir_shown = n.dump_dir ? shown_dir(n.dump_dir) : NULL;
	n.max_size_gb = cfg->dump_max_size_gb;
	bytes = cfg->dump_max_size_gb * 1073741824.0;
	n.max_bytes = bytes >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)bytes;
	n.max_count = cfg->dump_max_count;
	n.safetensors = cfg->dump_safetensors == 1;
	n.log_extra = log_extra_from_env();
	if (n.logdest == NULL || n.dump_dir == NULL || n.dump_dir_shown == NULL ||
	    mate_patterns_add(&n.include, cfg->dump_include) != 0 ||
	    mate_patterns_add(&n.exclude, cfg->dump_exclude) != 0) {
		release_config(&n);
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	mate_rec_log_lock();
	mate_rec_log_close();
	release_config(&mate_rec_cfg);
	mate_rec_cfg = n;
	memset(once_flags, 0, sizeof(once_flags));
	dump_stopped = 0;
	cached_pid = getpid();
	mate_rec_dump_reset(1);
	__atomic_add_fetch(&mate_rec_generation, 1, __ATOMIC_RELAXED);
	mate_rec_log_unlock();
	if (!atfork_done) {
		atfork_done = 1;
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	}
	mate_ev_configure(n.level, cfg->instruction_log, cfg->monitor);
	mate_rec_profile_configure(n.level >= 1 ? cfg->profile : NULL,
	    n.level >= 1 ? cfg->bench_log : NULL);
	__atomic_store_n(&mate_record_level_, n.level, __ATOMIC_RELEASE);
	return MATE_OK;
}

static void
init_from_env(void)
{
	struct mate_config cfg;

	identity_from_env();
	mate_config_from_env(&cfg);
	if (apply(&cfg, NULL) != MATE_OK) {
		mate_warn("out of memory reading the configuration; recording is off");
		__atomic_store_n(&mate_record_level_, 0, __ATOMIC_RELEASE);
	}
}

static void
init_nothing(void)
{
}

void
mate_rec_init(void)
{
	pthread_once(&init_once, init_from_env);
}

int
mate_configure(const struct mate_config *cfg, mate_error *err)
{
	struct mate_config env;

	if (cfg == NULL) {
		mate_config_from_env(&env);
		cfg = &env;
	}
	if (cfg->level < 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "level %d is negative", cfg->level);
	if (!(cfg->dump_max_size_gb >= 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "dump_max_size_gb must be >= 0");
	if (cfg->dump_max_count < 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "dump_max_count must be >= 0");
	if ((cfg->logdest != NULL && cfg->logdest[0] == '\0') ||
	    (cfg->dump_dir != NULL && cfg->dump_dir[0] == '\0'))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "empty logdest or dump_dir");
	pthread_once(&init_once, init_nothing);
	return apply(cfg, err);
}

int
mate_set_identity(const char *prefix, const char *name, mate_error *err)
{
	int rc;

	pthread_once(&init_once, init_nothing);
	if ((rc = set_identity(prefix, name, err)) != MATE_OK)
		return rc;
	return mate_configure(NULL, err);
}

int
mate_record_level(void)
{
	mate_rec_init();
	return __atomic_load_n(&mate_record_level_, __ATOMIC_ACQUIRE);
}

/* ---- fork ------------------------------------------------------------------------------ */

static void
atfork_prepare(void)
{
	mate_rec_log_lock();
	pthread_mutex_lock(&mate_rec_dump_lock);
	mate_rec_profile_atfork_prepare();
}

static void
atfork_parent(void)
{
	mate_rec_profile_atfork_parent();
	pthread_mutex_unlock(&mate_rec_dump_lock);
	mate_rec_log_unlock();
}

/* The child is a new process: its own pid, counters and limits, and its
 * own log file when MATE_LOGDEST names one per process (%i). */
static void
atfork_child(void)
{
	mate_rec_profile_atfork_child();
	pthread_mutex_unlock(&mate_rec_dump_lock);
	mate_rec_log_unlock();
	cached_pid = getpid();
	mate_rec_dump_reset(0);
	memset(once_flags, 0, sizeof(once_flags));
	if (mate_rec_cfg.logdest != NULL && strstr(mate_rec_cfg.logdest, "%i") != NULL)
		mate_rec_log_close();
	mate_rec_generation++;
	mate_ev_atfork_child();
}
