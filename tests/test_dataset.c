/*
 * test_dataset.c — the measurement CSV reader: quoting, column lookup by name, failed rows, and clear
 * errors (file, line, column) for broken input.
 */
#include <math.h>

#include "tests.h"
#include "util.h"

static const char header[] =
	"network,graph,input_shape,batch,optimizer,hw,threads,repeat,status,error,time_s,calib_s,memory_bytes,"
	"persistent_bytes,params,extra\n";

static int load(const char *body, abacus_dataset **d, abacus_error *err)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s%s", header, body);
	return abacus_dataset_load(d, buf, strlen(buf), "t.csv", err);
}

void test_dataset_parse(void);
void test_dataset_parse(void)
{
	abacus_dataset *d = NULL;
	abacus_error err;
	int rc = load("resnet18,data/graphs/resnet18-64.onnx,8x3x64x64,8,sgd,cpu1,1,0,ok,,0.25,0.01,123456789,1000,11689512,x\n"
	              "vgg11,g.onnx,1x3x32x32,64,adam,cpu2,2,1,oom,\"RuntimeError: \"\"alloc\"\", 1,2\nline two\",,,,,,\n"
	              "\n",
	              &d, &err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "  %s\n", err.msg);
		return;
	}
	CHECK_EQ_I64(abacus_dataset_n_rows(d), 2);
	const abacus_row *r = abacus_dataset_row(d, 0);
	CHECK(!strcmp(r->network, "resnet18"));
	CHECK(r->batch == 8);
	CHECK(r->memory_bytes == 123456789);
	CHECK(r->time_s == 0.25);
	CHECK(r->params == 11689512);
	CHECK(r->threads == 1);
	CHECK(!strcmp(r->hw, "cpu1"));
	r = abacus_dataset_row(d, 1);
	CHECK(!strcmp(r->status, "oom"));
	CHECK(r->repeat == 1);
	CHECK(isnan(r->time_s));
	CHECK(r->memory_bytes == -1);
	CHECK(!strcmp(r->error, "RuntimeError: \"alloc\", 1,2\nline two"));
	CHECK_EQ_I64(r->line, 3);
	abacus_dataset_free(d);
}

void test_dataset_errors(void);
void test_dataset_errors(void)
{
	abacus_dataset *d = NULL;
	abacus_error err;
	CHECK(load("a,b,1x1,1,sgd,cpu1,1,0,ok,,\"0.1,0,1,1,1,x\n", &d, &err) == ABACUS_EPARSE);
	CHECK_STR_CONTAINS(err.msg, "quoted");
	CHECK(load("a,b,1x1,1,sgd,cpu1,1,0,ok,,0.1,0.1,5\n", &d, &err) == ABACUS_EPARSE);
	CHECK_STR_CONTAINS(err.msg, "line 2");
	CHECK(load("a,b,1x1,1,sgd,cpu1,1,0,ok,,fast,0.1,5,1,1,x\n", &d, &err) == ABACUS_EPARSE);
	CHECK_STR_CONTAINS(err.msg, "time_s");
	CHECK(load("a,b,1x1,0,sgd,cpu1,1,0,ok,,0.1,0.1,5,1,1,x\n", &d, &err) == ABACUS_EPARSE);
	CHECK(abacus_dataset_load(&d, "network,graph\nx,y\n", 14, "h.csv", &err) == ABACUS_EPARSE);
	CHECK_STR_CONTAINS(err.msg, "no 'input_shape' column");
	CHECK(abacus_dataset_load(&d, "", 0, "e.csv", &err) == ABACUS_EPARSE);
	CHECK(abacus_dataset_load_file(&d, "/nonexistent/x.csv", &err) == ABACUS_EIO);
	/* Allocation failure at every step of a load. */
	char buf[1024];
	snprintf(buf, sizeof buf, "%sa,b,1x1,1,sgd,cpu1,1,0,ok,,0.1,0.1,5,1,1,x\n", header);
	ab_alloc_fail_after(0);
	CHECK(abacus_dataset_load(&d, buf, strlen(buf), "t", &err) == 0);
	abacus_dataset_free(d);
	long total = ab_alloc_fail_after(0);
	for (long n = 1; n <= total; n++) {
		ab_alloc_fail_after(n);
		d = NULL;
		int rc = abacus_dataset_load(&d, buf, strlen(buf), "t", &err);
		ab_alloc_fail_after(0);
		CHECK_EQ_I64(rc, ABACUS_ENOMEM);
		CHECK(d == NULL);
	}
}

/* Rows name their machine and runtime (protocol 2); a file without the columns is protocol 1's: machine
 * "unrecorded", runtime torch-1.13.1, never an empty string or NULL. */
void test_dataset_machine(void);
void test_dataset_machine(void)
{
	abacus_dataset *d = NULL;
	abacus_error err;
	static const char v2[] = "network,graph,input_shape,batch,optimizer,hw,status,time_s,memory_bytes,machine,runtime\n"
	                         "mlp,g.onnx,1x3x32x32,1,sgd,cpu1,ok,0.1,5,amd-f25m17-avx512-t1-97a5599e,torch-2.5.1\n"
	                         "mlp,g.onnx,2x3x32x32,2,sgd,cpu1,ok,0.1,5,,\n";
	CHECK(abacus_dataset_load(&d, v2, strlen(v2), "v2.csv", &err) == 0);
	if (d) {
		const abacus_row *r = abacus_dataset_row(d, 0);
		CHECK(!strcmp(r->machine, "amd-f25m17-avx512-t1-97a5599e"));
		CHECK(!strcmp(r->runtime, "torch-2.5.1"));
		r = abacus_dataset_row(d, 1);
		CHECK(!strcmp(r->machine, "unrecorded"));
		CHECK(!strcmp(r->runtime, "torch-1.13.1"));
	}
	abacus_dataset_free(d);
	d = NULL;
	CHECK(load("a,b,1x1,1,sgd,cpu1,1,0,ok,,0.1,0.1,5,1,1,x\n", &d, &err) == 0);
	if (d) {
		CHECK(!strcmp(abacus_dataset_row(d, 0)->machine, "unrecorded"));
		CHECK(!strcmp(abacus_dataset_row(d, 0)->runtime, "torch-1.13.1"));
	}
	abacus_dataset_free(d);
}

/* The `timestamp` column: seconds since the epoch in UTC (2026-12-02T15:22:03Z is 1,796,224,923 s, the leap
 * day of 2000 951,782,400, by Python's calendar.timegm), NaN when empty or absent, and a clear error naming the
 * line for anything else. */
void test_dataset_timestamp(void);
void test_dataset_timestamp(void)
{
	static const char head[] = "network,graph,input_shape,batch,optimizer,hw,status,time_s,memory_bytes,timestamp\n";
	char buf[1024];
	snprintf(buf, sizeof buf, "%sa,g,1x1,1,sgd,cpu1,ok,0.1,10,2026-12-02T15:22:03Z\na,g,1x1,1,sgd,cpu1,ok,0.1,10,\n"
	         "a,g,1x1,1,sgd,cpu1,ok,0.1,10,2000-02-29T00:00:00Z\n", head);
	abacus_dataset *d = NULL;
	abacus_error err;
	CHECK_EQ_I64(abacus_dataset_load(&d, buf, strlen(buf), "t.csv", &err), 0);
	if (d) {
		CHECK(abacus_dataset_row(d, 0)->measured_at == 1796224923.0);
		CHECK(isnan(abacus_dataset_row(d, 1)->measured_at));
		CHECK(abacus_dataset_row(d, 2)->measured_at == 951782400.0);
	}
	abacus_dataset_free(d);
	d = NULL;
	CHECK_EQ_I64(load("a,g,1x1,1,sgd,cpu1,1,0,ok,,0.1,0.01,10,1,1,x\n", &d, &err), 0); /* no such column */
	if (d)
		CHECK(isnan(abacus_dataset_row(d, 0)->measured_at));
	abacus_dataset_free(d);
	static const char *const bad[] = { "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-12-02 15:22:03",
	                                   "2026-12-02T15:22:03", "2026-12-02T24:00:00Z", "2026-12-02T15:22:03Zx", "x" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		d = NULL;
		snprintf(buf, sizeof buf, "%sa,g,1x1,1,sgd,cpu1,ok,0.1,10,%s\n", head, bad[i]);
		CHECK_EQ_I64(abacus_dataset_load(&d, buf, strlen(buf), "t.csv", &err), ABACUS_EPARSE);
		CHECK(d == NULL);
		CHECK_STR_CONTAINS(err.msg, "t.csv line 2, column 'timestamp'");
		CHECK_STR_CONTAINS(err.msg, bad[i]);
	}
}
