#define _GNU_SOURCE
#include "CSystem.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

int csystem_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}

int csystem_epoll_wait(int epfd, uint32_t *events, uint64_t *data, int capacity, int timeout_ms) {
    enum { batch = 256 };
    struct epoll_event ready[batch];
    if (capacity > batch) capacity = batch;
    int count = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        events[i] = ready[i].events;
        data[i] = ready[i].data.u64;
    }
    return count;
}

int csystem_accept4(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int csystem_accept4_peer(int fd, uint8_t address[16], int *family) {
    struct sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    memset(address, 0, 16);
    *family = 0;
    int accepted = accept4(fd, (struct sockaddr *)&peer, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (accepted < 0) return accepted;
    if (peer.ss_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
        memcpy(address, &((struct sockaddr_in *)&peer)->sin_addr, 4);
        *family = 4;
    } else if (peer.ss_family == AF_INET6 && length >= sizeof(struct sockaddr_in6)) {
        const uint8_t *bytes = ((struct sockaddr_in6 *)&peer)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(bytes, mapped, 12) == 0) {
            memcpy(address, bytes + 12, 4);
            *family = 4;
        } else {
            memcpy(address, bytes, 16);
            *family = 6;
        }
    }
    return accepted;
}

void csystem_park(uint32_t *word, uint32_t expected) {
    // EAGAIN (the word changed first) and EINTR both mean: go and look again.
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void csystem_unpark(uint32_t *word) {
    __atomic_store_n(word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void csystem_park_reset(uint32_t *word) { __atomic_store_n(word, 0, __ATOMIC_RELAXED); }

uint32_t csystem_park_load(const uint32_t *word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

void csystem_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof(truncated) - 1);
    truncated[sizeof(truncated) - 1] = '\0';
    pthread_setname_np(pthread_self(), truncated);
}

static pthread_once_t shutdown_fd_once = PTHREAD_ONCE_INIT;
static int shutdown_fd = -1;
static int shutdown_fd_errno = 0;

static void create_shutdown_fd(void) {
    shutdown_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (shutdown_fd < 0) shutdown_fd_errno = errno;
}

int csystem_shutdown_signal_fd(void) {
    pthread_once(&shutdown_fd_once, create_shutdown_fd);
    if (shutdown_fd < 0) errno = shutdown_fd_errno;
    return shutdown_fd;
}

static void forward_signal(int signo) {
    (void)signo;
    int saved = errno;  // the interrupted code may be about to read errno
    uint64_t one = 1;
    ssize_t ignored = write(shutdown_fd, &one, sizeof(one));
    (void)ignored;  // EAGAIN means a wake-up is already pending, which is all we need
    errno = saved;
}

// Installs `handler` for `signo` and unblocks the signal in the calling thread.
static int install_forwarder(int signo, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(signo, &action, NULL) != 0) return -1;
    // A parent may have started us with the signal blocked (the mask survives exec); threads created
    // after this call inherit the unblocked mask, so one of them can take the signal.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    int result = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    if (result != 0) {
        errno = result;
        return -1;
    }
    return 0;
}

int csystem_forward_signal_to_shutdown_fd(int signo) {
    if (csystem_shutdown_signal_fd() < 0) return -1;
    return install_forwarder(signo, forward_signal);
}

int csystem_restore_default_signal(int signo) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    return sigaction(signo, &action, NULL);
}

static pthread_once_t reload_fd_once = PTHREAD_ONCE_INIT;
static int reload_fd = -1;
static int reload_fd_errno = 0;

static void create_reload_fd(void) {
    reload_fd = eventfd(0, EFD_CLOEXEC);
    if (reload_fd < 0) reload_fd_errno = errno;
}

int csystem_reload_signal_fd(void) {
    pthread_once(&reload_fd_once, create_reload_fd);
    if (reload_fd < 0) errno = reload_fd_errno;
    return reload_fd;
}

static void forward_reload_signal(int signo) {
    (void)signo;
    int saved = errno;
    uint64_t one = 1;
    ssize_t ignored = write(reload_fd, &one, sizeof(one));
    (void)ignored;  // only fails when the counter is full, and then a reload is pending anyway
    errno = saved;
}

int csystem_forward_signal_to_reload_fd(int signo) {
    if (csystem_reload_signal_fd() < 0) return -1;
    return install_forwarder(signo, forward_reload_signal);
}
