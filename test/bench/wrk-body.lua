-- The body of wrk's POST runs in the benchmark (test/bench/bench.mjs, load.mjs): read once, when wrk starts, from
-- the file named by WRK_BODY_FILE. Deliberately no request/response/done functions: without them wrk sends one
-- prepared request over and over and never hands an answer to Lua, so this script costs nothing per request.
-- Headers (Authorization, Content-Type, ...) come from wrk's -H options.
wrk.method = "POST"
local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))
wrk.body = f:read("*a")
f:close()
