"sched.place"() {filter = {PP = "*"}, devices = [0]} : () -> ()
"sched.order"() {filters = [[{PP = 0 : i64, PASS = "F"}], [{PP = 1.5 : f64, PASS = "B"}]]} : () -> ()
