import CSystem
import Glibc

/// A joinable, named pthread. Used instead of Foundation's `Thread` because the server must join its
/// threads on shutdown and name them for `top -H`.
struct SystemThread: Sendable {
    private let handle: pthread_t

    /// Starts `body` on a new thread. The closure box is passed retained through pthread's `void *`
    /// and released by the new thread: nothing else reaches it, which is why `Unmanaged` is sound here.
    /// The compiler checks nothing across pthread_create, so `body` being `@Sendable` is the whole
    /// contract: whatever it captures must be safe to use from the new thread.
    static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(HTTPServerError) -> SystemThread {
        let box = Unmanaged.passRetained(Body(name: name, run: body))
        var handle = pthread_t()
        let result = pthread_create(
            &handle,
            nil,
            { raw in
                guard let raw else { return nil }
                let body = Unmanaged<Body>.fromOpaque(raw).takeRetainedValue()
                body.name.withCString { csystem_set_thread_name($0) }
                body.run()
                return nil
            },
            box.toOpaque()
        )
        guard result == 0 else {
            box.release()
            throw HTTPServerError.system("pthread_create", errno: result)
        }
        return SystemThread(handle: handle)
    }

    func join() {
        pthread_join(handle, nil)
    }

    private final class Body: Sendable {
        let name: String
        let run: @Sendable () -> Void

        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }
}
