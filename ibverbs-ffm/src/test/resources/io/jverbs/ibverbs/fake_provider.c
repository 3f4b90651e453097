/*
 * A fake libibverbs provider for the inline-dispatch tests and the JMH benchmark: a fake
 * ibv_context (with a verbs_context in front of it) whose ops record the arguments they got
 * and return a value derived from the op's name, plus fake qp, cq, srq, qp_ex, cq_ex, pd, mr,
 * mw, wq, dm, xrcd, td, flow, flow_action, counters and rwq_ind_table objects pointing at it.
 * Built by the tests with gcc against the installed verbs.h.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <stddef.h>
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

/*
 * Like a real provider, every op touches the memory its arguments describe: posts read the whole
 * work request (and inline data), set *bad_wr; poll_cq writes num_entries × sizeof(struct ibv_wc);
 * queries write the length they are given; creates read their attribute struct. So a pointer
 * check missing in Java crashes or corrupts here as it would on a device.
 */
static volatile uint64_t sink;

static void touch_read(const void *p, size_t n)
{
	const volatile unsigned char *b = p;
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += b[i];
	sink += s;
}

static void touch_write(void *p, size_t n, int value)
{
	volatile unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)value;
}

/* A provider reads the first request without a NULL check, then follows next. */
static void read_send_wr(const struct ibv_send_wr *wr)
{
	touch_read(wr, sizeof(*wr));
	for (int depth = 0; wr && depth < 16; depth++, wr = wr->next) {
		touch_read(wr, sizeof(*wr));
		for (int i = 0; i < wr->num_sge && i < 32; i++) {
			touch_read(&wr->sg_list[i], sizeof(struct ibv_sge));
			if (wr->send_flags & IBV_SEND_INLINE)
				touch_read((const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		}
	}
}

static void read_recv_wr(const struct ibv_recv_wr *wr)
{
	touch_read(wr, sizeof(*wr));
	for (int depth = 0; wr && depth < 16; depth++, wr = wr->next) {
		touch_read(wr, sizeof(*wr));
		for (int i = 0; i < wr->num_sge && i < 32; i++)
			touch_read(&wr->sg_list[i], sizeof(struct ibv_sge));
	}
}

struct fake_world {
	struct verbs_context vctx; /* ends with the struct ibv_context */
	struct ibv_qp qp;
	struct ibv_cq cq;
	struct ibv_srq srq;
	struct ibv_qp_ex qpx;
	struct ibv_cq_ex cqx;
	struct ibv_pd pd;
	struct ibv_mr mr;
	struct ibv_mw mw;
	struct ibv_wq wq;
	struct ibv_dm dm;
	struct ibv_xrcd xrcd;
	struct ibv_td td;
	struct ibv_flow flow;
	struct ibv_flow_action flow_action;
	struct ibv_counters counters;
	struct ibv_rwq_ind_table rwq_ind_table;
};

/* The world a context belongs to: the verbs_context (its first member) sits in front of it. */
static struct fake_world *world_of(struct ibv_context *ctx)
{
	return (struct fake_world *)verbs_get_ctx(ctx);
}

/* ---- ibv_context_ops: every fake op returns non-zero, so the posts report *bad_wr as a provider does on failure ---- */
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{ read_send_wr(wr); *bad = wr; return rec("post_send", 3, U(qp), U(wr), U(bad), 0, 0, 0); }
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ read_recv_wr(wr); *bad = wr; return rec("post_recv", 3, U(qp), U(wr), U(bad), 0, 0, 0); }
static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ read_recv_wr(wr); *bad = wr; return rec("post_srq_recv", 3, U(srq), U(wr), U(bad), 0, 0, 0); }
static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	for (int i = 0; i < n; i++) {
		memset(&wc[i], 0, sizeof(wc[i]));
		wc[i].wr_id = (uint64_t)i;
	}
	return rec("poll_cq", 3, U(cq), (uint64_t)(int64_t)n, U(wc), 0, 0, 0);
}
static int op_req_notify_cq(struct ibv_cq *cq, int solicited)
{ return rec("req_notify_cq", 2, U(cq), (uint64_t)(int64_t)solicited, 0, 0, 0, 0); }
static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{ rec("alloc_mw", 2, U(pd), type, 0, 0, 0, 0); return &world_of(pd->context)->mw; }
static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{ touch_read(bind, sizeof(*bind)); return rec("bind_mw", 3, U(qp), U(mw), U(bind), 0, 0, 0); }
static int op_dealloc_mw(struct ibv_mw *mw)
{ return rec("dealloc_mw", 1, U(mw), 0, 0, 0, 0, 0); }

/* ---- verbs_context ---- */
static int op_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len)
{ touch_write(attr, len, 0); return rec("query_port", 4, U(c), port, U(attr), len, 0, 0); }
static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr)
{ touch_read(attr, sizeof(*attr)); rec("create_cq_ex", 2, U(c), U(attr), 0, 0, 0, 0); return (struct ibv_cq_ex *)(uintptr_t)0x1234000; }
static struct ibv_qp *op_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr)
{ touch_read(attr, sizeof(*attr)); rec("create_qp_ex", 2, U(c), U(attr), 0, 0, 0, 0); return (struct ibv_qp *)(uintptr_t)0x5678000; }
static int op_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len)
{
	if (in)
		touch_read(in, sizeof(*in));
	touch_write(attr, len, 0);
	return rec("query_device_ex", 4, U(c), U(in), U(attr), len, 0, 0);
}
static struct ibv_xrcd *op_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("open_xrcd", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->xrcd; }
static int op_close_xrcd(struct ibv_xrcd *x) { return rec("close_xrcd", 1, U(x), 0, 0, 0, 0, 0); }
static struct ibv_srq *op_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr)
{ touch_read(attr, sizeof(*attr)); rec("create_srq_ex", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->srq; }
static int op_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{ *num = 0x5151; return rec("get_srq_num", 2, U(srq), U(num), 0, 0, 0, 0); }
static int op_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{ touch_read(attr, sizeof(*attr)); return rec("modify_cq", 2, U(cq), U(attr), 0, 0, 0, 0); }
static int op_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad)
{ touch_read(op, sizeof(*op)); *bad = op; return rec("post_srq_ops", 3, U(srq), U(op), U(bad), 0, 0, 0); }
static struct ibv_td *op_alloc_td(struct ibv_context *c, struct ibv_td_init_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("alloc_td", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->td; }
static int op_dealloc_td(struct ibv_td *td) { return rec("dealloc_td", 1, U(td), 0, 0, 0, 0, 0); }
static struct ibv_pd *op_alloc_parent_domain(struct ibv_context *c, struct ibv_parent_domain_init_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("alloc_parent_domain", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->pd; }
static int op_query_rt_values(struct ibv_context *c, struct ibv_values_ex *values)
{ touch_write(values, sizeof(*values), 0); return rec("query_rt_values", 2, U(c), U(values), 0, 0, 0, 0); }
static struct ibv_qp *op_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("open_qp", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->qp; }
static int op_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr)
{ touch_read(attr, sizeof(*attr)); return rec("modify_qp_rate_limit", 2, U(qp), U(attr), 0, 0, 0, 0); }
static struct ibv_wq *op_create_wq(struct ibv_context *c, struct ibv_wq_init_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("create_wq", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->wq; }
static int op_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{ touch_read(attr, sizeof(*attr)); return rec("modify_wq", 2, U(wq), U(attr), 0, 0, 0, 0); }
static int op_destroy_wq(struct ibv_wq *wq) { return rec("destroy_wq", 1, U(wq), 0, 0, 0, 0, 0); }
static struct ibv_rwq_ind_table *op_create_rwq_ind_table(struct ibv_context *c, struct ibv_rwq_ind_table_init_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("create_rwq_ind_table", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->rwq_ind_table; }
static int op_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t) { return rec("destroy_rwq_ind_table", 1, U(t), 0, 0, 0, 0, 0); }
static struct ibv_flow *op_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *flow)
{
	const char *p = (const char *)(flow + 1);
	touch_read(flow, sizeof(*flow));
	for (int i = 0; i < flow->num_of_specs; i++) {
		const struct ibv_spec_header { uint32_t type; uint16_t size; } *h = (const void *)p;
		touch_read(p, h->size);
		p += h->size;
	}
	rec("ibv_create_flow", 2, U(qp), U(flow), 0, 0, 0, 0);
	return &world_of(qp->context)->flow;
}
static int op_destroy_flow(struct ibv_flow *f) { return rec("ibv_destroy_flow", 1, U(f), 0, 0, 0, 0, 0); }
static struct ibv_flow_action *op_create_flow_action_esp(struct ibv_context *c, struct ibv_flow_action_esp_attr *esp)
{ touch_read(esp, sizeof(*esp)); rec("create_flow_action_esp", 2, U(c), U(esp), 0, 0, 0, 0); return &world_of(c)->flow_action; }
static int op_modify_flow_action_esp(struct ibv_flow_action *a, struct ibv_flow_action_esp_attr *esp)
{ touch_read(esp, sizeof(*esp)); return rec("modify_flow_action_esp", 2, U(a), U(esp), 0, 0, 0, 0); }
static int op_destroy_flow_action(struct ibv_flow_action *a) { return rec("destroy_flow_action", 1, U(a), 0, 0, 0, 0, 0); }
static int op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sg, uint32_t n)
{ touch_read(sg, (size_t)n * sizeof(*sg)); return rec("advise_mr", 5, U(pd), advice, flags, U(sg), n, 0); }
static struct ibv_dm *op_alloc_dm(struct ibv_context *c, struct ibv_alloc_dm_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("alloc_dm", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->dm; }
static int op_free_dm(struct ibv_dm *dm) { return rec("free_dm", 1, U(dm), 0, 0, 0, 0, 0); }
static int dm_memcpy_to_dm(struct ibv_dm *dm, uint64_t off, const void *host, size_t len)
{ touch_read(host, len); return rec("memcpy_to_dm", 4, U(dm), off, U(host), len, 0, 0); }
static int dm_memcpy_from_dm(void *host, struct ibv_dm *dm, uint64_t off, size_t len)
{ touch_write(host, len, 0x5a); return rec("memcpy_from_dm", 4, U(host), U(dm), off, len, 0, 0); }
static struct ibv_mr *op_alloc_null_mr(struct ibv_pd *pd)
{ rec("alloc_null_mr", 1, U(pd), 0, 0, 0, 0, 0); return &world_of(pd->context)->mr; }
static struct ibv_mr *op_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t len, unsigned int access)
{ rec("reg_dm_mr", 5, U(pd), U(dm), off, len, access, 0); return &world_of(pd->context)->mr; }
static struct ibv_counters *op_create_counters(struct ibv_context *c, struct ibv_counters_init_attr *attr)
{ touch_read(attr, sizeof(*attr)); rec("create_counters", 2, U(c), U(attr), 0, 0, 0, 0); return &world_of(c)->counters; }
static int op_destroy_counters(struct ibv_counters *c) { return rec("destroy_counters", 1, U(c), 0, 0, 0, 0, 0); }
static int op_attach_counters_point_flow(struct ibv_counters *c, struct ibv_counter_attach_attr *attr, struct ibv_flow *f)
{ touch_read(attr, sizeof(*attr)); return rec("attach_counters_point_flow", 3, U(c), U(attr), U(f), 0, 0, 0); }
static int op_read_counters(struct ibv_counters *c, uint64_t *values, uint32_t n, uint32_t flags)
{
	for (uint32_t i = 0; i < n; i++)
		values[i] = i + 1;
	return rec("read_counters", 4, U(c), U(values), n, flags, 0, 0);
}
static int wq_post_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ read_recv_wr(wr); *bad = wr; return rec("post_wq_recv", 3, U(wq), U(wr), U(bad), 0, 0, 0); }

/* ---- ibv_qp_ex ---- */
static void wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, uint64_t cmp, uint64_t swp)
{ rec("wr_atomic_cmp_swp", 5, U(q), rkey, ra, cmp, swp, 0); }
static void wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, uint64_t add)
{ rec("wr_atomic_fetch_add", 4, U(q), rkey, ra, add, 0, 0); }
static void wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *bi)
{ touch_read(mw, sizeof(void *)); touch_read(bi, sizeof(*bi)); rec("wr_bind_mw", 4, U(q), U(mw), rkey, U(bi), 0, 0); }
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
{ touch_read(hdr, hdr_sz); rec("wr_send_tso", 4, U(q), U(hdr), hdr_sz, mss, 0, 0); }
static void wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{ touch_read(ah, sizeof(void *)); rec("wr_set_ud_addr", 4, U(q), U(ah), qpn, qkey, 0, 0); }
static void wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{ rec("wr_set_xrc_srqn", 2, U(q), srqn, 0, 0, 0, 0); }
static void wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t len)
{ touch_read(addr, len); rec("wr_set_inline_data", 3, U(q), U(addr), len, 0, 0, 0); }
static void wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *l)
{
	for (size_t i = 0; i < n; i++) {
		touch_read(&l[i], sizeof(l[i]));
		touch_read(l[i].addr, l[i].length);
	}
	rec("wr_set_inline_data_list", 3, U(q), n, U(l), 0, 0, 0);
}
static void wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len)
{ rec("wr_set_sge", 4, U(q), lkey, addr, len, 0, 0); }
static void wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *l)
{ touch_read(l, n * sizeof(*l)); rec("wr_set_sge_list", 3, U(q), n, U(l), 0, 0, 0); }
static void wr_start(struct ibv_qp_ex *q)
{ rec("wr_start", 1, U(q), 0, 0, 0, 0, 0); }
static int wr_complete(struct ibv_qp_ex *q)
{ return rec("wr_complete", 1, U(q), 0, 0, 0, 0, 0); }
static void wr_abort(struct ibv_qp_ex *q)
{ rec("wr_abort", 1, U(q), 0, 0, 0, 0, 0); }
static void wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t ra, const void *w)
{ touch_read(w, 8); rec("wr_atomic_write", 4, U(q), rkey, ra, U(w), 0, 0); }

/* ---- ibv_cq_ex ---- */
static int cq_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *a)
{ touch_read(a, sizeof(*a)); return rec("start_poll", 2, U(c), U(a), 0, 0, 0, 0); }
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
static void cq_read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *t)
{ touch_write(t, sizeof(*t), 0); rec("read_tm_info", 2, U(c), U(t), 0, 0, 0, 0); }

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
	w->qp.pd = &w->pd;
	w->cq.context = ctx;
	w->srq.context = ctx;
	w->qpx.qp_base.context = ctx;
	w->cqx.context = ctx;
	w->pd.context = ctx;
	w->mr.context = ctx;
	w->mr.pd = &w->pd;
	w->mw.context = ctx;
	w->mw.pd = &w->pd;
	w->mw.type = IBV_MW_TYPE_1;
	w->wq.context = ctx;
	w->dm.context = ctx;
	w->xrcd.context = ctx;
	w->td.context = ctx;
	w->flow.context = ctx;
	w->flow_action.context = ctx;
	w->counters.context = ctx;
	w->rwq_ind_table.context = ctx;
	if (!with_ops)
		return w;
	ctx->ops.post_send = op_post_send;
	ctx->ops.post_recv = op_post_recv;
	ctx->ops.post_srq_recv = op_post_srq_recv;
	ctx->ops.poll_cq = op_poll_cq;
	ctx->ops.req_notify_cq = op_req_notify_cq;
	ctx->ops.alloc_mw = op_alloc_mw;
	ctx->ops.bind_mw = op_bind_mw;
	ctx->ops.dealloc_mw = op_dealloc_mw;
	w->vctx.query_port = op_query_port;
	w->vctx.create_cq_ex = op_create_cq_ex;
	w->vctx.create_qp_ex = op_create_qp_ex;
	w->vctx.query_device_ex = op_query_device_ex;
	w->vctx.open_xrcd = op_open_xrcd;
	w->vctx.close_xrcd = op_close_xrcd;
	w->vctx.create_srq_ex = op_create_srq_ex;
	w->vctx.get_srq_num = op_get_srq_num;
	w->vctx.modify_cq = op_modify_cq;
	w->vctx.post_srq_ops = op_post_srq_ops;
	w->vctx.alloc_td = op_alloc_td;
	w->vctx.dealloc_td = op_dealloc_td;
	w->vctx.alloc_parent_domain = op_alloc_parent_domain;
	w->vctx.query_rt_values = op_query_rt_values;
	w->vctx.open_qp = op_open_qp;
	w->vctx.modify_qp_rate_limit = op_modify_qp_rate_limit;
	w->vctx.create_wq = op_create_wq;
	w->vctx.modify_wq = op_modify_wq;
	w->vctx.destroy_wq = op_destroy_wq;
	w->vctx.create_rwq_ind_table = op_create_rwq_ind_table;
	w->vctx.destroy_rwq_ind_table = op_destroy_rwq_ind_table;
	w->vctx.ibv_create_flow = op_create_flow;
	w->vctx.ibv_destroy_flow = op_destroy_flow;
	w->vctx.create_flow_action_esp = op_create_flow_action_esp;
	w->vctx.modify_flow_action_esp = op_modify_flow_action_esp;
	w->vctx.destroy_flow_action = op_destroy_flow_action;
	w->vctx.advise_mr = op_advise_mr;
	w->vctx.alloc_dm = op_alloc_dm;
	w->vctx.free_dm = op_free_dm;
	w->vctx.alloc_null_mr = op_alloc_null_mr;
	w->vctx.reg_dm_mr = op_reg_dm_mr;
	w->vctx.create_counters = op_create_counters;
	w->vctx.destroy_counters = op_destroy_counters;
	w->vctx.attach_counters_point_flow = op_attach_counters_point_flow;
	w->vctx.read_counters = op_read_counters;
	w->wq.post_recv = wq_post_recv;
	w->dm.memcpy_to_dm = dm_memcpy_to_dm;
	w->dm.memcpy_from_dm = dm_memcpy_from_dm;
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

/* The world's other objects by their struct name ("pd", "mr", "mw", "wq", ...); NULL for an unknown name. */
void *fake_object(struct fake_world *w, const char *name)
{
	static const struct { const char *name; size_t offset; } objects[] = {
		{ "pd", offsetof(struct fake_world, pd) },
		{ "mr", offsetof(struct fake_world, mr) },
		{ "mw", offsetof(struct fake_world, mw) },
		{ "wq", offsetof(struct fake_world, wq) },
		{ "dm", offsetof(struct fake_world, dm) },
		{ "xrcd", offsetof(struct fake_world, xrcd) },
		{ "td", offsetof(struct fake_world, td) },
		{ "flow", offsetof(struct fake_world, flow) },
		{ "flow_action", offsetof(struct fake_world, flow_action) },
		{ "counters", offsetof(struct fake_world, counters) },
		{ "rwq_ind_table", offsetof(struct fake_world, rwq_ind_table) },
	};
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		if (!strcmp(objects[i].name, name))
			return (char *)w + objects[i].offset;
	return NULL;
}

/* ---- the benchmark's fast ops: what a provider's post and poll cost at the least ---- */
static uint64_t bench_posted;
static int bench_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{ (void)qp; (void)bad; bench_posted = wr->wr_id; return 0; }
static int bench_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{ (void)cq; if (n < 1) return 0; wc->wr_id = bench_posted; wc->status = IBV_WC_SUCCESS; return 1; }

/* An empty CQ that arms without error: poll_cq finds nothing, req_notify_cq returns 0. */
static int idle_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{ (void)cq; (void)n; (void)wc; return 0; }
static int idle_req_notify_cq(struct ibv_cq *cq, int solicited)
{ (void)cq; (void)solicited; return 0; }

/* Switches a world's CQ to the idle ops (a blocking wait then goes on to ibv_get_cq_event). */
void fake_use_idle_cq(struct fake_world *w)
{
	w->vctx.context.ops.poll_cq = idle_poll_cq;
	w->vctx.context.ops.req_notify_cq = idle_req_notify_cq;
}

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

/*
 * The C side of the high-level benchmark: fill a 64-byte signaled RDMA Write work request (as
 * an application does per operation), post it and poll its completion.
 */
uint64_t fake_bench_c_write_loop(struct fake_world *w, struct ibv_send_wr *wr, struct ibv_sge *sge, struct ibv_wc *wc,
				 long iterations, void *buf, uint32_t lkey, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr *bad;
	uint64_t sum = 0;
	for (long i = 0; i < iterations; i++) {
		sge->addr = (uintptr_t)buf;
		sge->length = 64;
		sge->lkey = lkey;
		wr->wr_id = (uint64_t)i;
		wr->next = NULL;
		wr->sg_list = sge;
		wr->num_sge = 1;
		wr->opcode = IBV_WR_RDMA_WRITE;
		wr->send_flags = IBV_SEND_SIGNALED;
		wr->wr.rdma.remote_addr = remote_addr;
		wr->wr.rdma.rkey = rkey;
		if (ibv_post_send(&w->qp, wr, &bad))
			return (uint64_t)-1;
		if (ibv_poll_cq(&w->cq, 1, wc) != 1)
			return (uint64_t)-1;
		sum += wc->wr_id;
	}
	return sum;
}
