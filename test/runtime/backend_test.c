/* The backend record (runtime/backend.c): which comm backend prt_comm_init chooses and which
 * engine runs each kind of the plan's transfers. Built twice: prt-backend-test links
 * libpiper_rt alone (it must choose serial), prt-backend-mpi-test links libpiper_rt_mpi too
 * (it must choose MPI, under mpirun or started alone). Usage:
 *   prt-backend-test EXPECTED_BACKEND EXPECTED_WORLD
 * Every rank runs every check; rank 0 prints, the failures are summed over the ranks, and
 * main returns their number, so a failure on any rank fails the test. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "prt_internal.h"

static const char *want_name; /* argv[1] */
static int64_t want_world;    /* argv[2] */

/* Before prt_comm_init the record is the serial backend's, in every binary: a world of one.
 * Seen before the rank is known, reported after (only rank 0 prints). */
static char before_init[256]; /* "" or the first cause */
static void look_before_init(void) {
  const prt_backend *b = prt_backend_current();
  if (b->comm != &prt_comm_serial)
    snprintf(before_init, sizeof before_init, "record starts on '%s', expected serial",
             b->comm->name);
  else if (b->device != prt_device_cpu())
    snprintf(before_init, sizeof before_init, "record starts on device '%s', expected the "
             "CPU's", b->device ? b->device->name : "(none)");
  else if (prt_comm_size() != 1 || prt_comm_rank() != 0)
    snprintf(before_init, sizeof before_init, "world %lld rank %lld before init, expected 1 "
             "and 0", (long long)prt_comm_size(), (long long)prt_comm_rank());
  for (int k = 0; k < PRT_OP_KINDS && !before_init[0]; k++)
    if (b->xfer[k] != &prt_comm_serial.xfer)
      snprintf(before_init, sizeof before_init, "transfer kind %d not on serial's engine", k);
}
static void check_before_init(void) {
  begin("before_init");
  if (before_init[0]) fail("%s", before_init);
  end();
}

/* After prt_comm_init: the backend the binary links, its world, every kind on its engine. */
static void check_chosen(void) {
  begin("chosen");
  const prt_backend *b = prt_backend_current();
  if (strcmp(b->comm->name, want_name) != 0)
    fail("chose '%s', expected '%s'", b->comm->name, want_name);
  if (b->comm->one_process != !strcmp(want_name, "serial"))
    fail("'%s' says one_process = %d", b->comm->name, b->comm->one_process);
  if (prt_comm_size() != want_world)
    fail("world of %lld, expected %lld", (long long)prt_comm_size(), (long long)want_world);
  if (b->device != prt_device_cpu() || b->collectives != PRT_COMM_MPI)
    fail("a CPU binary's record is on device '%s' with collectives %d, expected the CPU's and "
         "the world's engine", b->device->name, (int)b->collectives);
  if (prt_comm_rank() < 0 || prt_comm_rank() >= prt_comm_size())
    fail("rank %lld outside the world of %lld", (long long)prt_comm_rank(),
         (long long)prt_comm_size());
  for (int k = 0; k < PRT_OP_KINDS; k++)
    if (b->xfer[k] != &b->comm->xfer || b->xfer[k]->device_memory)
      fail("transfer kind %d runs on '%s', expected the comm backend's host engine", k,
           b->xfer[k]->name);
  /* the world-level calls go to the chosen backend: a sum over the world */
  int64_t one = 1;
  prt_comm_allreduce_i64(&one, 1, PRT_REDUCE_SUM);
  if (one != want_world) fail("all-reduce of 1 over the world gave %lld", (long long)one);
  end();
}

/* A stand-in for a device's collectives engine (NCCL): counts what reaches it. */
static int fake_starts, fake_finishes;
static void fake_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  fake_starts++;
  req->i = 7;
  for (int64_t j = 0; j < op->n; j++) op->out[j] = 42.0f; /* not a sum: proves it ran here */
}
static void fake_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  if (req->i == 7) fake_finishes++;
}
static int fake_test(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) { return 1; }
static const prt_xfer_vtable fake_engine = {"fake", 1, fake_start, fake_finish, fake_test};

/* prt_backend_use_collectives moves exactly the collectives; a plan's all-reduce then runs on
 * the new engine, and point-to-point stays on the comm backend (a real exchange between two
 * ranks where there are two). */
static void check_collectives_engine(void) {
  begin("collectives_engine");
  const prt_backend *b = prt_backend_current();
  const prt_xfer_vtable *host = &b->comm->xfer;
  prt_backend_use_collectives(&fake_engine);
  static const int moved[PRT_OP_KINDS] = {[PRT_OP_ALL_REDUCE] = 1, [PRT_OP_REDUCE_SCATTER] = 1,
                                          [PRT_OP_ALL_GATHER] = 1};
  for (int k = 0; k < PRT_OP_KINDS; k++)
    if (b->xfer[k] != (moved[k] ? &fake_engine : host))
      fail("transfer kind %d runs on '%s' after installing a collectives engine", k,
           b->xfer[k]->name);
  int64_t world = prt_comm_size(), rank = prt_comm_rank();
  prt_ctx *ctx = prt_ctx_create();
  int64_t members[2] = {0, 1};
  prt_declare_world(ctx, world);
  prt_declare_group(ctx, 0, world, members);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  float x[3] = {1, 2, 3};
  prt_wait(ctx, prt_iall_reduce(ctx, x, 3, 0, 0));
  if (fake_starts != 1 || fake_finishes != 1 || x[0] != 42.0f || x[2] != 42.0f)
    fail("all-reduce: %d starts, %d finishes, x = [%g, %g, %g] (expected 1, 1 and the "
         "engine's 42s)", fake_starts, fake_finishes, x[0], x[1], x[2]);
  if (world == 2) { /* a send and a receive still cross MPI */
    float mine = (float)(10 + rank), theirs = 0;
    int64_t r = prt_irecv(ctx, &theirs, 1, 1 - rank, 5, 0);
    int64_t s = prt_isend(ctx, &mine, 1, 1 - rank, 5, 0);
    prt_wait(ctx, s);
    prt_wait(ctx, r);
    if (theirs != (float)(11 - rank)) fail("received %g from rank %lld", theirs,
                                           (long long)(1 - rank));
    if (fake_starts != 1) fail("point-to-point reached the collectives engine");
  }
  prt_ctx_destroy(ctx);
  /* back to the comm backend's engine for the checks after this one */
  prt_backend_use_collectives(host);
  /* one row (NCCL's send/recv and all-to-all engines go in this way): only that kind moves */
  prt_backend_use_engine(PRT_OP_ALL_TO_ALL, &fake_engine);
  for (int k = 0; k < PRT_OP_KINDS; k++)
    if (b->xfer[k] != (k == PRT_OP_ALL_TO_ALL ? &fake_engine : host))
      fail("transfer kind %d runs on '%s' after installing an all-to-all engine", k,
           b->xfer[k]->name);
  prt_backend_use_engine(PRT_OP_ALL_TO_ALL, host);
  end();
}

/* prt_fatal stops through the chosen backend's abort: exit status 1, the message on stderr.
 * In a child (serial only: a forked MPI rank cannot abort alone). */
static void check_fatal_stops(void) {
  begin("fatal_stops");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    prt_fatal("deliberate stop from the backend test");
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) fail("fork/wait failed");
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 1)
    fail("prt_fatal ended the child with status 0x%x, expected exit 1", status);
  end();
}

/* --comm: mpi and nccl parse, anything else is refused at parsing with exit code 2. */
static void check_comm_flag(void) {
  begin("comm_flag");
  static const struct {
    const char *value;
    int code, comm;
  } cases[] = {{NULL, 0, PRT_COMM_AUTO}, {"mpi", 0, PRT_COMM_MPI}, {"nccl", 0, PRT_COMM_NCCL},
               {"gloo", 2, 0}, {"", 2, 0}, {"MPI", 2, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *argv[] = {"train", "--comm", (char *)cases[i].value, NULL};
    prt_opts o;
    prt_status st = {0};
    int rc = prt_parse_args(cases[i].value ? 3 : 1, argv, &o, &st);
    if (rc != cases[i].code)
      fail("--comm '%s': status %d, expected %d (%s)", cases[i].value ? cases[i].value : "",
           rc, cases[i].code, st.msg);
    else if (rc == 0 && o.comm != cases[i].comm)
      fail("--comm '%s' parsed as %d, expected %d", cases[i].value ? cases[i].value : "",
           o.comm, cases[i].comm);
    if (rc == 0) continue;
    char quoted[64];
    snprintf(quoted, sizeof quoted, "got '%s'", cases[i].value);
    if (!strstr(st.msg, "--comm expects mpi") || !strstr(st.msg, quoted))
      fail("--comm '%s': the message names neither the flag's values nor the value given: %s",
           cases[i].value, st.msg);
  }
  end();
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s EXPECTED_BACKEND EXPECTED_WORLD\n", argv[0]);
    return 2;
  }
  want_name = argv[1];
  want_world = atoll(argv[2]);
  look_before_init();
  int owner = prt_comm_init(&argc, &argv);
  int64_t rank = prt_comm_rank();
  if (rank != 0 && !freopen("/dev/null", "w", stdout)) return 1; /* rank 0 reports */
  check_before_init();
  check_chosen();
  check_collectives_engine();
  if (prt_backend_current()->comm->one_process) check_fatal_stops();
  check_comm_flag();
  int64_t failed = failures;
  prt_comm_allreduce_i64(&failed, 1, PRT_REDUCE_SUM);
  if (failed == 0) printf("all checks passed\n");
  fflush(stdout);
  if (owner) prt_comm_finalize();
  return (int)(failed > 0);
}
