# SIGINT stops a runaway loop: "interrupted" with a traceback, exit 130.
"$COMB" -e 'fn spin() { while true { } }
spin()' 2>err &
pid=$!
sleep 0.3
kill -INT $pid
wait $pid
echo "status $?"
cat err; rm -f err
