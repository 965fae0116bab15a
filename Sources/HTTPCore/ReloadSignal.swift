import CSystem
import Glibc

/// Runs an action each time the process receives a reload signal (`SIGHUP` for `serve`), on a
/// thread of its own that waits for it, so the signal never stops the server and the action may
/// take its time (reading files). Signals that arrive while the action runs are folded into one
/// more run. The handler only counts the signal on an eventfd, which keeps it async-signal-safe.
public enum ReloadSignal {
    /// Installs the handler for `signal` and starts the waiting thread; it lives as long as the process.
    public static func watch(_ signal: Int32, _ action: @escaping @Sendable () -> Void) throws(HTTPServerError) {
        let fd = csystem_reload_signal_fd()
        guard fd >= 0 else { throw HTTPServerError.system("eventfd for reload signals") }
        guard csystem_forward_signal_to_reload_fd(signal) == 0 else {
            throw HTTPServerError.system("sigaction(\(signal))")
        }
        _ = try SystemThread.spawn(name: "reload-signal") {
            var count: UInt64 = 0
            while true {
                let read = Glibc.read(fd, &count, MemoryLayout<UInt64>.size)
                if read == MemoryLayout<UInt64>.size {
                    action()
                } else if read < 0 && errno != EINTR {
                    return
                }
            }
        }
    }
}
