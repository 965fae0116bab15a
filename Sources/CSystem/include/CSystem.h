// Linux system calls and constants that Swift's Glibc module does not expose (epoll, eventfd,
// accept4, getrandom, futex, thread names) plus an async-signal-safe shutdown signal forwarder. Kept tiny: the
// HTTP server's logic lives in Swift; this header only makes the kernel interface reachable.
#ifndef CSYSTEM_H
#define CSYSTEM_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

// The epoll flags are enum-and-macro pairs in glibc; plain constants import cleanly into Swift.
static const uint32_t csystem_EPOLLIN = EPOLLIN;
static const uint32_t csystem_EPOLLOUT = EPOLLOUT;
static const uint32_t csystem_EPOLLERR = EPOLLERR;
static const uint32_t csystem_EPOLLHUP = EPOLLHUP;
static const uint32_t csystem_EPOLLET = EPOLLET;
static const int csystem_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int csystem_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int csystem_EPOLL_CTL_DEL = EPOLL_CTL_DEL;
static const int csystem_SOCK_STREAM = SOCK_STREAM;
static const int csystem_SOCK_NONBLOCK_CLOEXEC = SOCK_NONBLOCK | SOCK_CLOEXEC;
static const int csystem_EFD_NONBLOCK_CLOEXEC = EFD_NONBLOCK | EFD_CLOEXEC;
static const int csystem_MSG_NOSIGNAL = MSG_NOSIGNAL;

/// getrandom(2) with no flags: bytes from the kernel's CSPRNG, blocking only until it is seeded at boot.
/// May return fewer bytes than asked (over 256) or -1 with errno EINTR; the caller loops.
static inline long csystem_getrandom(void *buffer, unsigned long count) { return getrandom(buffer, count, 0); }

/// epoll_ctl with the event's 64-bit user data, so Swift never builds the packed `epoll_event`.
int csystem_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);

/// epoll_wait that unpacks the packed `epoll_event` array into two plain arrays.
int csystem_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int capacity, int timeout_ms);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC and no peer address (glibc declares accept4 only
/// under _GNU_SOURCE, which Swift's Glibc module does not define).
int csystem_accept4(int fd);
/// accept4 as above, also reporting the peer's address: `family` 4 (the first 4 bytes of `address`,
/// IPv4-mapped IPv6 included), 6 (all 16 bytes), or 0 (anything else, e.g. a Unix socket).
int csystem_accept4_peer(int fd, uint8_t address[16], int *family);

/// A thread parking spot on one 32-bit word (futex(2), process-private). `csystem_park` sleeps while
/// the word holds `expected` and returns on a wake, on a signal, spuriously, or at once if the word
/// already differs: the caller re-checks its own condition. `csystem_unpark` stores 1 (release) and
/// wakes one thread parked on the word; `csystem_park_reset` stores 0 before the caller parks.
void csystem_park(uint32_t *word, uint32_t expected);
void csystem_unpark(uint32_t *word);
void csystem_park_reset(uint32_t *word);
/// The word's value (acquire), so a woken thread sees what its waker wrote before `csystem_unpark`.
uint32_t csystem_park_load(const uint32_t *word);

/// Names the calling thread (shown by `top -H` and debuggers); truncated to 15 bytes.
void csystem_set_thread_name(const char *name);

/// The process-wide eventfd that shutdown signals are forwarded to. Created on first use and never
/// closed, so a signal handler running on any thread can never write into a reused descriptor.
/// Returns -1 with errno set if it cannot be created.
int csystem_shutdown_signal_fd(void);

/// Installs a handler for `signo` that writes 1 to `csystem_shutdown_signal_fd()`; the write is the
/// only thing the handler does, which keeps it async-signal-safe. Also unblocks `signo` in the calling
/// thread, so threads it creates afterwards can receive it. Returns 0 or -1 with errno set.
int csystem_forward_signal_to_shutdown_fd(int signo);

/// Restores the default disposition of `signo`. Returns 0 or -1 with errno set.
int csystem_restore_default_signal(int signo);

/// The process-wide eventfd that reload signals (SIGHUP) are forwarded to: blocking, so a thread can
/// wait on it; created on first use and never closed. Returns -1 with errno set if it cannot be created.
int csystem_reload_signal_fd(void);

/// Installs a handler for `signo` that adds 1 to `csystem_reload_signal_fd()` and does nothing else
/// (async-signal-safe), and unblocks `signo` in the calling thread. Returns 0 or -1 with errno set.
int csystem_forward_signal_to_reload_fd(int signo);

#endif
