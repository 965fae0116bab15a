import Foundation
import Synchronization

/// Prometheus counters and histograms kept in memory and rendered in the text exposition format.
/// Label values come from a closed set (route patterns, status codes, result names), so cardinality
/// stays bounded whatever clients send.
public final class Metrics: Sendable {
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Histogram {
        var buckets = [UInt64](repeating: 0, count: Metrics.latencyBuckets.count)
        var count: UInt64 = 0
        var sum: Double = 0
    }

    private struct State {
        var requests: [String: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        var transitions: [String: UInt64] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests["route=\"\(route)\",method=\"\(method)\",status=\"\(status)\"", default: 0] += 1
            var histogram = state.latency["route=\"\(route)\"", default: Histogram()]
            for (index, bound) in Self.latencyBuckets.enumerated() where seconds <= bound {
                histogram.buckets[index] += 1
            }
            histogram.count += 1
            histogram.sum += seconds
            state.latency["route=\"\(route)\""] = histogram
        }
    }

    /// One upgrade call's outcome: the status it left the upgrade in and the result the client saw.
    func recordTransition(status: String, result: String) {
        state.withLock { $0.transitions["status=\"\(status)\",result=\"\(result)\"", default: 0] += 1 }
    }

    /// The exposition text; `gauges` are sampled by the caller at scrape time.
    func render(gauges: [(name: String, help: String, value: Double)]) -> String {
        let snapshot = state.withLock { $0 }
        var out = ""
        out += "# HELP http_requests_total Requests answered, by route pattern, method and status.\n"
        out += "# TYPE http_requests_total counter\n"
        for (labels, value) in snapshot.requests.sorted(by: { $0.key < $1.key }) {
            out += "http_requests_total{\(labels)} \(value)\n"
        }
        out += "# HELP http_request_duration_seconds Time from a request's arrival at a worker to its answer.\n"
        out += "# TYPE http_request_duration_seconds histogram\n"
        for (labels, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            for (index, bound) in Self.latencyBuckets.enumerated() {
                out += "http_request_duration_seconds_bucket{\(labels),le=\"\(bound)\"} \(histogram.buckets[index])\n"
            }
            out += "http_request_duration_seconds_bucket{\(labels),le=\"+Inf\"} \(histogram.count)\n"
            out += "http_request_duration_seconds_sum{\(labels)} \(histogram.sum)\n"
            out += "http_request_duration_seconds_count{\(labels)} \(histogram.count)\n"
        }
        out +=
            "# HELP upgrade_transitions_total Upgrade calls, by the status they left the upgrade in and the result answered.\n"
        out += "# TYPE upgrade_transitions_total counter\n"
        for (labels, value) in snapshot.transitions.sorted(by: { $0.key < $1.key }) {
            out += "upgrade_transitions_total{\(labels)} \(value)\n"
        }
        for gauge in gauges {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) gauge\n\(gauge.name) \(gauge.value)\n"
        }
        return out
    }
}
