// expected-error@+1 {{reduce_stream must be a non-empty string}}
"sched.replicate"() {devices = [0, 1], filter = {PP = 0 : i64}, reduce_stream = ""} : () -> ()
