-- wrk script: after the run, one line "percentiles P50 P99 P99.9" in milliseconds from wrk's own
-- latency histogram (wrk --latency prints no 99.9th percentile).
done = function(summary, latency, requests)
    io.write(string.format("percentiles %.3f %.3f %.3f\n",
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000))
end
