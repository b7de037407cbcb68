/*
 * json.c — the one-line JSON objects the collector's workers print (`--list` entries, the ready
 * line, one result per configuration). A bounds-checked cursor over the text; only a flat object is
 * unpacked: nested arrays and objects are kept as raw text (with a nesting limit), numbers as their text.
 */
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define MAX_DEPTH 32

typedef struct cursor {
	const char *s;
	size_t i, n;
	char *err;
	size_t errlen;
} cursor;

static int fail(cursor *c, const char *what)
{
	snprintf(c->err, c->errlen, "JSON: %s at byte %zu", what, c->i);
	return -1;
}

static void skip_ws(cursor *c)
{
	while (c->i < c->n && strchr(" \t\r\n", c->s[c->i]))
		c->i++;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Appends the UTF-8 encoding of code point `cp` to out[*k]. */
static void put_utf8(char *out, size_t *k, unsigned cp)
{
	if (cp < 0x80) {
		out[(*k)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*k)++] = (char)(0xC0 | (cp >> 6));
		out[(*k)++] = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		out[(*k)++] = (char)(0xE0 | (cp >> 12));
		out[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[(*k)++] = (char)(0x80 | (cp & 0x3F));
	} else {
		out[(*k)++] = (char)(0xF0 | (cp >> 18));
		out[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
		out[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[(*k)++] = (char)(0x80 | (cp & 0x3F));
	}
}

static int read_hex4(cursor *c, unsigned *cp)
{
	if (c->n - c->i < 4)
		return fail(c, "short \\u escape");
	unsigned v = 0;
	for (int j = 0; j < 4; j++) {
		int h = hexval(c->s[c->i + (size_t)j]);
		if (h < 0)
			return fail(c, "bad \\u escape");
		v = v * 16 + (unsigned)h;
	}
	c->i += 4;
	*cp = v;
	return 0;
}

/* A string at the cursor (which is on the opening quote) → malloc'd, unescaped. The decoded form is never
 * longer than the escaped one, so one buffer of the escaped length is enough. */
static int parse_string(cursor *c, char **out)
{
	c->i++; /* the quote */
	size_t start = c->i;
	while (c->i < c->n && c->s[c->i] != '"')
		c->i += c->s[c->i] == '\\' ? 2 : 1;
	if (c->i >= c->n)
		return fail(c, "unterminated string");
	size_t end = c->i;
	char *buf = malloc(end - start + 1);
	if (!buf)
		return fail(c, "out of memory");
	size_t k = 0;
	c->i = start;
	while (c->i < end) {
		char ch = c->s[c->i++];
		if (ch != '\\') {
			buf[k++] = ch;
			continue;
		}
		ch = c->s[c->i++];
		switch (ch) {
		case 'n': buf[k++] = '\n'; break;
		case 't': buf[k++] = '\t'; break;
		case 'r': buf[k++] = '\r'; break;
		case 'b': buf[k++] = '\b'; break;
		case 'f': buf[k++] = '\f'; break;
		case 'u': {
			unsigned cp;
			if (read_hex4(c, &cp)) {
				free(buf);
				return -1;
			}
			/* A surrogate pair takes 12 escaped bytes and becomes 4; a lone surrogate becomes U+FFFD. */
			if (cp >= 0xD800 && cp < 0xDC00 && c->i + 6 <= end && c->s[c->i] == '\\' && c->s[c->i + 1] == 'u') {
				unsigned lo;
				c->i += 2;
				if (read_hex4(c, &lo)) {
					free(buf);
					return -1;
				}
				cp = lo >= 0xDC00 && lo < 0xE000 ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00) : 0xFFFD;
			} else if (cp >= 0xD800 && cp < 0xE000) {
				cp = 0xFFFD;
			}
			if (cp == 0)
				cp = 0xFFFD; /* no NUL inside C strings */
			put_utf8(buf, &k, cp);
			break;
		}
		default: buf[k++] = ch; break; /* \" \\ \/ */
		}
	}
	buf[k] = '\0';
	c->i = end + 1;
	*out = buf;
	return 0;
}

/* Skips a nested array/object, respecting strings; the cursor is on the opening bracket. */
static int skip_nested(cursor *c)
{
	int depth = 0;
	while (c->i < c->n) {
		char ch = c->s[c->i];
		if (ch == '"') {
			c->i++;
			while (c->i < c->n && c->s[c->i] != '"')
				c->i += c->s[c->i] == '\\' ? 2 : 1;
			if (c->i >= c->n)
				return fail(c, "unterminated string");
		} else if (ch == '[' || ch == '{') {
			if (++depth > MAX_DEPTH)
				return fail(c, "nested too deeply");
		} else if (ch == ']' || ch == '}') {
			if (--depth == 0) {
				c->i++;
				return 0;
			}
		}
		c->i++;
	}
	return fail(c, "unterminated array or object");
}

static int parse_value(cursor *c, char **out, jv_type *type)
{
	skip_ws(c);
	if (c->i >= c->n)
		return fail(c, "missing value");
	char ch = c->s[c->i];
	size_t start = c->i;
	if (ch == '"') {
		*type = JV_STRING;
		return parse_string(c, out);
	}
	if (ch == '[' || ch == '{') {
		if (skip_nested(c))
			return -1;
		*type = JV_RAW;
	} else if (ch == '-' || (ch >= '0' && ch <= '9')) {
		while (c->i < c->n && strchr("0123456789+-.eE", c->s[c->i]))
			c->i++;
		*type = JV_NUMBER;
	} else if (c->n - c->i >= 4 && !strncmp(c->s + c->i, "true", 4)) {
		c->i += 4;
		*type = JV_BOOL;
	} else if (c->n - c->i >= 5 && !strncmp(c->s + c->i, "false", 5)) {
		c->i += 5;
		*type = JV_BOOL;
	} else if (c->n - c->i >= 4 && !strncmp(c->s + c->i, "null", 4)) {
		c->i += 4;
		*type = JV_NULL;
	} else {
		return fail(c, "unexpected character");
	}
	*out = strndup(c->s + start, c->i - start);
	return *out ? 0 : fail(c, "out of memory");
}

int jobj_parse(jobj *o, const char *text, char *err, size_t errlen)
{
	cursor c = { text, 0, strlen(text), err, errlen };
	size_t cap = 0;
	o->f = NULL;
	o->n = 0;
	skip_ws(&c);
	if (c.i >= c.n || c.s[c.i] != '{')
		return fail(&c, "expected an object");
	c.i++;
	skip_ws(&c);
	if (c.i < c.n && c.s[c.i] == '}') {
		c.i++;
		goto tail;
	}
	for (;;) {
		skip_ws(&c);
		if (c.i >= c.n || c.s[c.i] != '"') {
			fail(&c, "expected a key");
			goto bad;
		}
		jfield f = { 0 };
		if (parse_string(&c, &f.key))
			goto bad;
		skip_ws(&c);
		if (c.i >= c.n || c.s[c.i] != ':') {
			free(f.key);
			fail(&c, "expected ':'");
			goto bad;
		}
		c.i++;
		if (parse_value(&c, &f.val, &f.type)) {
			free(f.key);
			goto bad;
		}
		if (o->n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			jfield *nf = realloc(o->f, nc * sizeof *nf);
			if (!nf) {
				free(f.key);
				free(f.val);
				fail(&c, "out of memory");
				goto bad;
			}
			o->f = nf;
			cap = nc;
		}
		o->f[o->n++] = f;
		skip_ws(&c);
		if (c.i < c.n && c.s[c.i] == ',') {
			c.i++;
			continue;
		}
		if (c.i < c.n && c.s[c.i] == '}') {
			c.i++;
			break;
		}
		fail(&c, "expected ',' or '}'");
		goto bad;
	}
tail:
	skip_ws(&c);
	if (c.i != c.n) {
		fail(&c, "text after the object");
		goto bad;
	}
	return 0;
bad:
	jobj_free(o);
	return -1;
}

void jobj_free(jobj *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->f[i].key);
		free(o->f[i].val);
	}
	free(o->f);
	o->f = NULL;
	o->n = 0;
}

const char *jobj_get(const jobj *o, const char *key, jv_type *type)
{
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->f[i].key, key)) {
			if (type)
				*type = o->f[i].type;
			return o->f[i].val;
		}
	return NULL;
}

int jobj_int(const jobj *o, const char *key, int64_t *out)
{
	jv_type t;
	const char *v = jobj_get(o, key, &t);
	if (!v || t != JV_NUMBER)
		return -1;
	char *end;
	long long x = strtoll(v, &end, 10);
	if (end == v || *end)
		return -1;
	*out = x;
	return 0;
}

int json_int_array(const char *raw, int64_t *out, size_t cap)
{
	const char *p = raw;
	size_t n = 0;
	while (*p == ' ')
		p++;
	if (*p++ != '[')
		return -1;
	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == ']')
			return (int)n;
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p)
			return -1;
		if (n < cap)
			out[n] = v;
		n++;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == ',')
			p++;
		else if (*p != ']')
			return -1;
	}
}
