/*
 * rdma_test: the C example of the Soft-RoCE action's README. On the device it is given, it
 * connects one RC queue pair to itself through the given GID, writes 4 KiB from one buffer into
 * another with RDMA Write, waits for the completion and compares the buffers.
 *
 *   rdma_test --device rxe0 --gid-index 1
 *
 * Prints "rdma_test: PASS on DEVICE ..." and exits 0, or names the verb that failed and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define SIZE 4096

static int fail(const char *verb, int err)
{
    fprintf(stderr, "rdma_test: %s failed: %s\n", verb, strerror(err));
    return 1;
}

int main(int argc, char **argv)
{
    const char *name = NULL;
    int gid_index = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--device") == 0)
            name = argv[i + 1];
        else if (strcmp(argv[i], "--gid-index") == 0)
            gid_index = atoi(argv[i + 1]);
    }
    if (!name || gid_index < 0) {
        fprintf(stderr, "usage: rdma_test --device NAME --gid-index N\n");
        return 2;
    }

    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list)
        return fail("ibv_get_device_list", errno);
    struct ibv_device *dev = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(ibv_get_device_name(list[i]), name) == 0)
            dev = list[i];
    if (!dev) {
        fprintf(stderr, "rdma_test: no device %s (%d found)\n", name, n);
        return 1;
    }
    struct ibv_context *ctx = ibv_open_device(dev);
    if (!ctx)
        return fail("ibv_open_device", errno);
    struct ibv_port_attr port;
    if (ibv_query_port(ctx, 1, &port))
        return fail("ibv_query_port", errno);
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, gid_index, &gid))
        return fail("ibv_query_gid", errno);

    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    if (!pd)
        return fail("ibv_alloc_pd", errno);
    static char src[SIZE], dst[SIZE];
    for (int i = 0; i < SIZE; i++)
        src[i] = (char)(i * 7 + 1);
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    struct ibv_mr *src_mr = ibv_reg_mr(pd, src, SIZE, access);
    struct ibv_mr *dst_mr = ibv_reg_mr(pd, dst, SIZE, access);
    if (!src_mr || !dst_mr)
        return fail("ibv_reg_mr", errno);
    struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    if (!cq)
        return fail("ibv_create_cq", errno);
    struct ibv_qp_init_attr init = {
        .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
    };
    struct ibv_qp *qp = ibv_create_qp(pd, &init);
    if (!qp)
        return fail("ibv_create_qp", errno);

    struct ibv_qp_attr attr = {
        .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
        .qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
    };
    int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc)
        return fail("ibv_modify_qp (INIT)", rc);
    memset(&attr, 0, sizeof attr);
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = port.active_mtu;
    attr.dest_qp_num = qp->qp_num; /* itself */
    attr.rq_psn = 0;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = gid;
    attr.ah_attr.grh.sgid_index = (uint8_t)gid_index;
    attr.ah_attr.grh.hop_limit = 64;
    attr.ah_attr.port_num = 1;
    rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN
                       | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc)
        return fail("ibv_modify_qp (RTR)", rc);
    memset(&attr, 0, sizeof attr);
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = 0;
    attr.max_rd_atomic = 1;
    rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY
                       | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc)
        return fail("ibv_modify_qp (RTS)", rc);

    struct ibv_sge sge = { .addr = (uintptr_t)src, .length = SIZE, .lkey = src_mr->lkey };
    struct ibv_send_wr wr = {
        .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = dst_mr->rkey },
    }, *bad;
    rc = ibv_post_send(qp, &wr, &bad);
    if (rc)
        return fail("ibv_post_send", rc);
    struct ibv_wc wc;
    int polled = 0;
    for (long spins = 0; polled == 0 && spins < 2000000000L; spins++)
        polled = ibv_poll_cq(cq, 1, &wc);
    if (polled <= 0) {
        fprintf(stderr, "rdma_test: no completion for the RDMA Write\n");
        return 1;
    }
    if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "rdma_test: the RDMA Write completed with %s\n", ibv_wc_status_str(wc.status));
        return 1;
    }
    if (memcmp(src, dst, SIZE) != 0) {
        fprintf(stderr, "rdma_test: the written buffer differs from the source\n");
        return 1;
    }
    printf("rdma_test: PASS on %s: RDMA Write of %d bytes through gid index %d, port MTU %d\n",
           name, SIZE, gid_index, 128 << port.active_mtu);

    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(src_mr);
    ibv_dereg_mr(dst_mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
