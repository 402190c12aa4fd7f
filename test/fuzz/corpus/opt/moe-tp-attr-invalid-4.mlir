// A directive's stream that is not a string: the shard's all-to-alls (and place's ops) would
// carry it, and the lowering read it as "compute" without a word.
// expected-error@+1 {{stream must be a non-empty string}}
"sched.shard"() {devices = [0, 1], filter = {EP = "*", PP = 0 : i64}, stream = 3 : i64} : () -> ()

