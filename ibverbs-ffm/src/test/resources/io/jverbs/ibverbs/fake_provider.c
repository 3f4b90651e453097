/*
 * A fake libibverbs provider for the inline-dispatch tests and the JMH benchmark: a fake
 * ibv_context (with a verbs_context in front of it) whose ops record the arguments they got
 * and return a value derived from the op's name, plus fake qp, cq, srq, qp_ex and cq_ex
 * objects pointing at it. Built by the tests with gcc against the installed verbs.h.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char last_name[64];
static uint64_t last_args[8];
static int last_nargs;
static uint64_t call_count;

static int rec(const char *name, int n, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	strncpy(last_name, name, sizeof(last_name) - 1);
	last_args[0] = a0; last_args[1] = a1; last_args[2] = a2;
	last_args[3] = a3; last_args[4] = a4; last_args[5] = a5;
	last_nargs = n;
	call_count++;
	/* A distinct, recognisable return value per op: the sum of the name's bytes. */
	int h = 0;
	for (const char *p = name; *p; p++)
		h += (unsigned char)*p;
	return h;
}

const char *fake_last_name(void) { return last_name; }
uint64_t fake_last_arg(int i) { return last_args[i]; }
int fake_last_nargs(void) { return last_nargs; }
uint64_t fake_call_count(void) { return call_count; }
void fake_reset(void) { memset(last_name, 0, sizeof(last_name)); memset(last_args, 0, sizeof(last_args)); last_nargs = 0; }
int fake_expected(const char *name) { int h = 0; for (const char *p = name; *p; p++) h += (unsigned char)*p; return h; }

#define U(x) ((uint64_t)(uintptr_t)(x))

/* ---- ibv_context_ops ---- */
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{ return rec("post_send", 3, U(qp), U(wr), U(bad), 0, 0, 0); }
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ return rec("post_recv", 3, U(qp), U(wr), U(bad), 0, 0, 0); }
static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ return rec("post_srq_recv", 3, U(srq), U(wr), U(bad), 0, 0, 0); }
static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{ return rec("poll_cq", 3, U(cq), (uint64_t)(int64_t)n, U(wc), 0, 0, 0); }
static int op_req_notify_cq(struct ibv_cq *cq, int solicited)
{ return rec("req_notify_cq", 2, U(cq), (uint64_t)(int64_t)solicited, 0, 0, 0, 0); }

/* ---- verbs_context ---- */
static int op_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len)
{ return rec("query_port", 4, U(c), port, U(attr), len, 0, 0); }
static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr)
{ rec("create_cq_ex", 2, U(c), U(attr), 0, 0, 0, 0); return (struct ibv_cq_ex *)(uintptr_t)0x1234000; }
static struct ibv_qp *op_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr)
{ rec("create_qp_ex", 2, U(c), U(attr), 0, 0, 0, 0); return (struct ibv_qp *)(uintptr_t)0x5678000; }
static int op_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len)
{ return rec("query_device_ex", 4, U(c), U(in), U(attr), len, 0, 0); }

/* ---- ibv_qp_ex ---- */
static void wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, uint64_t cmp, uint64_t swp)
{ rec("wr_atomic_cmp_swp", 5, U(q), rkey, ra, cmp, swp, 0); }
static void wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, uint64_t add)
{ rec("wr_atomic_fetch_add", 4, U(q), rkey, ra, add, 0, 0); }
static void wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi)
{ rec("wr_bind_mw", 4, U(q), U(mw), rkey, U(bi), 0, 0); }
static void wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{ rec("wr_local_inv", 2, U(q), rkey, 0, 0, 0, 0); }
static void wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra)
{ rec("wr_rdma_read", 3, U(q), rkey, ra, 0, 0, 0); }
static void wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra)
{ rec("wr_rdma_write", 3, U(q), rkey, ra, 0, 0, 0); }
static void wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, __be32 imm)
{ rec("wr_rdma_write_imm", 4, U(q), rkey, ra, (uint32_t)imm, 0, 0); }
static void wr_send(struct ibv_qp_ex *q)
{ rec("wr_send", 1, U(q), 0, 0, 0, 0, 0); }
static void wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{ rec("wr_send_imm", 2, U(q), (uint32_t)imm, 0, 0, 0, 0); }
static void wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{ rec("wr_send_inv", 2, U(q), rkey, 0, 0, 0, 0); }
static void wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{ rec("wr_send_tso", 4, U(q), U(hdr), hdr_sz, mss, 0, 0); }
static void wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{ rec("wr_set_ud_addr", 4, U(q), U(ah), qpn, qkey, 0, 0); }
static void wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{ rec("wr_set_xrc_srqn", 2, U(q), srqn, 0, 0, 0, 0); }
static void wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t len)
{ rec("wr_set_inline_data", 3, U(q), U(addr), len, 0, 0, 0); }
static void wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *l)
{ rec("wr_set_inline_data_list", 3, U(q), n, U(l), 0, 0, 0); }
static void wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len)
{ rec("wr_set_sge", 4, U(q), lkey, addr, len, 0, 0); }
static void wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *l)
{ rec("wr_set_sge_list", 3, U(q), n, U(l), 0, 0, 0); }
static void wr_start(struct ibv_qp_ex *q)
{ rec("wr_start", 1, U(q), 0, 0, 0, 0, 0); }
static int wr_complete(struct ibv_qp_ex *q)
{ return rec("wr_complete", 1, U(q), 0, 0, 0, 0, 0); }
static void wr_abort(struct ibv_qp_ex *q)
{ rec("wr_abort", 1, U(q), 0, 0, 0, 0, 0); }
static void wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, const void *w)
{ rec("wr_atomic_write", 4, U(q), rkey, ra, U(w), 0, 0); }

/* ---- ibv_cq_ex ---- */
static int cq_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *a)
{ return rec("start_poll", 2, U(c), U(a), 0, 0, 0, 0); }
static int cq_next_poll(struct ibv_cq_ex *c) { return rec("next_poll", 1, U(c), 0, 0, 0, 0, 0); }
static void cq_end_poll(struct ibv_cq_ex *c) { rec("end_poll", 1, U(c), 0, 0, 0, 0, 0); }
static enum ibv_wc_opcode cq_read_opcode(struct ibv_cq_ex *c) { return (enum ibv_wc_opcode)rec("read_opcode", 1, U(c), 0, 0, 0, 0, 0); }
static uint32_t cq_read_vendor_err(struct ibv_cq_ex *c) { return rec("read_vendor_err", 1, U(c), 0, 0, 0, 0, 0); }
static uint32_t cq_read_byte_len(struct ibv_cq_ex *c) { return rec("read_byte_len", 1, U(c), 0, 0, 0, 0, 0); }
static __be32 cq_read_imm_data(struct ibv_cq_ex *c) { return (__be32)rec("read_imm_data", 1, U(c), 0, 0, 0, 0, 0); }
static uint32_t cq_read_qp_num(struct ibv_cq_ex *c) { return rec("read_qp_num", 1, U(c), 0, 0, 0, 0, 0); }
static uint32_t cq_read_src_qp(struct ibv_cq_ex *c) { return rec("read_src_qp", 1, U(c), 0, 0, 0, 0, 0); }
static unsigned int cq_read_wc_flags(struct ibv_cq_ex *c) { return rec("read_wc_flags", 1, U(c), 0, 0, 0, 0, 0); }
static uint32_t cq_read_slid(struct ibv_cq_ex *c) { return rec("read_slid", 1, U(c), 0, 0, 0, 0, 0); }
static uint8_t cq_read_sl(struct ibv_cq_ex *c) { return (uint8_t)rec("read_sl", 1, U(c), 0, 0, 0, 0, 0); }
static uint8_t cq_read_dlid_path_bits(struct ibv_cq_ex *c) { return (uint8_t)rec("read_dlid_path_bits", 1, U(c), 0, 0, 0, 0, 0); }
static uint64_t cq_read_completion_ts(struct ibv_cq_ex *c) { return rec("read_completion_ts", 1, U(c), 0, 0, 0, 0, 0) + 0x100000000ull; }
static uint64_t cq_read_completion_wallclock_ns(struct ibv_cq_ex *c) { return rec("read_completion_wallclock_ns", 1, U(c), 0, 0, 0, 0, 0) + 0x100000000ull; }
static uint16_t cq_read_cvlan(struct ibv_cq_ex *c) { return (uint16_t)rec("read_cvlan", 1, U(c), 0, 0, 0, 0, 0); }
static uint32_t cq_read_flow_tag(struct ibv_cq_ex *c) { return rec("read_flow_tag", 1, U(c), 0, 0, 0, 0, 0); }
static void cq_read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *t) { rec("read_tm_info", 2, U(c), U(t), 0, 0, 0, 0); }

struct fake_world {
	struct verbs_context vctx; /* ends with the struct ibv_context */
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct ibv_srq srq;
	struct ibv_qp_ex qpx;
	struct ibv_cq_ex cqx;
};

/*
 * extended: whether abi_compat says the context is extended; sz: the verbs_context size to
 * claim (0 = the real one); with_ops: 0 leaves every op of every table NULL.
 */
struct fake_world *fake_new(int extended, size_t sz, int with_ops)
{
	struct fake_world *w = calloc(1, sizeof(*w));
	struct ibv_context *ctx = &w->vctx.context;

	w->vctx.sz = sz ? sz : sizeof(struct verbs_context);
	ctx->abi_compat = extended ? (void *)UINTPTR_MAX : NULL;
	w->qp.context = ctx;
	w->cq.context = ctx;
	w->srq.context = ctx;
	w->qpx.qp_base.context = ctx;
	w->cqx.context = ctx;
	if (!with_ops)
		return w;
	ctx->ops.post_send = op_post_send;
	ctx->ops.post_recv = op_post_recv;
	ctx->ops.post_srq_recv = op_post_srq_recv;
	ctx->ops.poll_cq = op_poll_cq;
	ctx->ops.req_notify_cq = op_req_notify_cq;
	w->vctx.query_port = op_query_port;
	w->vctx.create_cq_ex = op_create_cq_ex;
	w->vctx.create_qp_ex = op_create_qp_ex;
	w->vctx.query_device_ex = op_query_device_ex;
	w->qpx.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	w->qpx.wr_atomic_fetch_add = wr_atomic_fetch_add;
	w->qpx.wr_bind_mw = wr_bind_mw;
	w->qpx.wr_local_inv = wr_local_inv;
	w->qpx.wr_rdma_read = wr_rdma_read;
	w->qpx.wr_rdma_write = wr_rdma_write;
	w->qpx.wr_rdma_write_imm = wr_rdma_write_imm;
	w->qpx.wr_send = wr_send;
	w->qpx.wr_send_imm = wr_send_imm;
	w->qpx.wr_send_inv = wr_send_inv;
	w->qpx.wr_send_tso = wr_send_tso;
	w->qpx.wr_set_ud_addr = wr_set_ud_addr;
	w->qpx.wr_set_xrc_srqn = wr_set_xrc_srqn;
	w->qpx.wr_set_inline_data = wr_set_inline_data;
	w->qpx.wr_set_inline_data_list = wr_set_inline_data_list;
	w->qpx.wr_set_sge = wr_set_sge;
	w->qpx.wr_set_sge_list = wr_set_sge_list;
	w->qpx.wr_start = wr_start;
	w->qpx.wr_complete = wr_complete;
	w->qpx.wr_abort = wr_abort;
	w->qpx.wr_atomic_write = wr_atomic_write;
	w->cqx.start_poll = cq_start_poll;
	w->cqx.next_poll = cq_next_poll;
	w->cqx.end_poll = cq_end_poll;
	w->cqx.read_opcode = cq_read_opcode;
	w->cqx.read_vendor_err = cq_read_vendor_err;
	w->cqx.read_byte_len = cq_read_byte_len;
	w->cqx.read_imm_data = cq_read_imm_data;
	w->cqx.read_qp_num = cq_read_qp_num;
	w->cqx.read_src_qp = cq_read_src_qp;
	w->cqx.read_wc_flags = cq_read_wc_flags;
	w->cqx.read_slid = cq_read_slid;
	w->cqx.read_sl = cq_read_sl;
	w->cqx.read_dlid_path_bits = cq_read_dlid_path_bits;
	w->cqx.read_completion_ts = cq_read_completion_ts;
	w->cqx.read_completion_wallclock_ns = cq_read_completion_wallclock_ns;
	w->cqx.read_cvlan = cq_read_cvlan;
	w->cqx.read_flow_tag = cq_read_flow_tag;
	w->cqx.read_tm_info = cq_read_tm_info;
	return w;
}

void fake_free(struct fake_world *w) { free(w); }
struct ibv_context *fake_context(struct fake_world *w) { return &w->vctx.context; }
struct ibv_qp *fake_qp(struct fake_world *w) { return &w->qp; }
struct ibv_cq *fake_cq(struct fake_world *w) { return &w->cq; }
struct ibv_srq *fake_srq(struct fake_world *w) { return &w->srq; }
struct ibv_qp_ex *fake_qpx(struct fake_world *w) { return &w->qpx; }
struct ibv_cq_ex *fake_cqx(struct fake_world *w) { return &w->cqx; }

/* ---- the benchmark's fast ops: what a provider's post and poll cost at the least ---- */
static uint64_t bench_posted;
static int bench_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{ (void)qp; (void)bad; bench_posted = wr->wr_id; return 0; }
static int bench_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{ (void)cq; if (n < 1) return 0; wc->wr_id = bench_posted; wc->status = IBV_WC_SUCCESS; return 1; }

/* Switches a world to the benchmark ops. */
void fake_use_bench_ops(struct fake_world *w)
{
	w->vctx.context.ops.post_send = bench_post_send;
	w->vctx.context.ops.poll_cq = bench_poll_cq;
}

/*
 * The C side of the benchmark: the same calls the Java loop makes, through verbs.h's own
 * inline ibv_post_send / ibv_poll_cq. Returns the sum of the polled wr_ids so nothing is elided.
 */
uint64_t fake_bench_c_loop(struct fake_world *w, struct ibv_send_wr *wr, struct ibv_wc *wc, long iterations)
{
	struct ibv_send_wr *bad;
	uint64_t sum = 0;
	for (long i = 0; i < iterations; i++) {
		wr->wr_id = (uint64_t)i;
		if (ibv_post_send(&w->qp, wr, &bad))
			return (uint64_t)-1;
		if (ibv_poll_cq(&w->cq, 1, wc) != 1)
			return (uint64_t)-1;
		sum += wc->wr_id;
	}
	return sum;
}

/* One verb at a time, for the per-call comparison. */
uint64_t fake_bench_c_post_send(struct fake_world *w, struct ibv_send_wr *wr, long iterations)
{
	struct ibv_send_wr *bad;
	uint64_t failures = 0;
	for (long i = 0; i < iterations; i++) {
		wr->wr_id = (uint64_t)i;
		failures += ibv_post_send(&w->qp, wr, &bad) != 0;
	}
	return failures;
}

uint64_t fake_bench_c_poll_cq(struct fake_world *w, struct ibv_wc *wc, long iterations)
{
	uint64_t sum = 0;
	for (long i = 0; i < iterations; i++) {
		sum += ibv_poll_cq(&w->cq, 1, wc);
		sum += wc->wr_id;
	}
	return sum;
}
