// rtload: a lockstep request/response load client for Unix stream sockets.
//
// Each of CONNECTIONS connections sends one request, waits for the whole answer, and sends the next, for SECONDS.
// By default one thread drives every connection through epoll, so the client costs one core at most. With -t, each
// connection has a thread of its own doing blocking reads and writes: the shape of CONNECTIONS separate programs, and
// of the client the issues' figures were measured with (`make bench` uses it, to compare like with like). Either way,
// a client that is not the bottleneck is shown by driving the line-echo server faster than usherd.
//
// Usage: rtload [-t] SOCKET CONNECTIONS SECONDS line REQUEST   (NDJSON: the answer ends at '\n')
//        rtload SOCKET CONNECTIONS SECONDS lines FILE     (NDJSON, requests taken in turn from FILE's lines)
//        rtload SOCKET CONNECTIONS SECONDS sshagent       (ssh-agent REQUEST_IDENTITIES)
//        rtload [-t] SOCKET CONNECTIONS SECONDS varlink CALL   (Varlink: the call and its reply end at a NUL byte)
// Prints one line: requests N rate R/s p50 X p90 Y p99 Z max W (microseconds) errors E
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum mode { LINE, LINES, SSH_AGENT };

struct connection {
    int fd;
    double sentAt;
    size_t received;   // bytes of the current answer so far
    size_t expected;   // ssh-agent: the whole message length once known
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// What ends a request and an answer: a newline, or a NUL for Varlink messages.
static char terminator = '\n';
static char **requests;
static size_t *requestLengths;
static size_t requestCount, nextRequest;

static int send_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, bytes, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        bytes += n;
        length -= (size_t)n;
    }
    return 0;
}

static int send_request(struct connection *c, enum mode mode) {
    static const char agentRequest[5] = {0, 0, 0, 1, 11};
    c->received = 0;
    c->expected = 0;
    c->sentAt = now();
    if (mode == SSH_AGENT) return send_all(c->fd, agentRequest, sizeof agentRequest);
    size_t index = nextRequest++ % requestCount;
    return send_all(c->fd, requests[index], requestLengths[index]);
}

static int compare(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void add_request(const char *text, size_t length) {
    requests = realloc(requests, (requestCount + 1) * sizeof *requests);
    requestLengths = realloc(requestLengths, (requestCount + 1) * sizeof *requestLengths);
    char *line = malloc(length + 1);
    memcpy(line, text, length);
    line[length] = terminator;
    requests[requestCount] = line;
    requestLengths[requestCount] = length + 1;
    requestCount++;
}

struct worker {
    const char *path;
    enum mode mode;
    double deadline;
    uint32_t *latencies;
    size_t done, capacity;
    long errors;
};

static pthread_mutex_t requestLock = PTHREAD_MUTEX_INITIALIZER;

// One connection in lockstep on its own thread, with blocking reads and writes.
static void *work(void *argument) {
    struct worker *w = argument;
    struct connection c = {0};
    c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, w->path, sizeof address.sun_path - 1);
    if (connect(c.fd, (struct sockaddr *)&address, sizeof address) < 0) {
        w->errors++;
        return NULL;
    }
    char buffer[1 << 16];
    while (now() < w->deadline) {
        pthread_mutex_lock(&requestLock);
        int sent = send_request(&c, w->mode);
        pthread_mutex_unlock(&requestLock);
        if (sent < 0) { w->errors++; break; }
        int complete = 0;
        while (!complete) {
            ssize_t n = read(c.fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) { w->errors++; close(c.fd); return NULL; }
            if (w->mode == SSH_AGENT) {
                if (c.received < 4 && c.received + (size_t)n >= 4) {
                    const unsigned char *h = (const unsigned char *)buffer - c.received;
                    c.expected = 4 + ((size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | (size_t)h[3]);
                }
                c.received += (size_t)n;
                complete = c.expected > 0 && c.received >= c.expected;
            } else {
                complete = buffer[n - 1] == terminator;
                if (complete && n >= 9 && memmem(buffer, (size_t)n, "\"error\"", 7) != NULL) w->errors++;
            }
        }
        if (w->done == w->capacity) {
            w->capacity = w->capacity ? w->capacity * 2 : 1 << 16;
            w->latencies = realloc(w->latencies, w->capacity * sizeof *w->latencies);
        }
        w->latencies[w->done++] = (uint32_t)((now() - c.sentAt) * 1e6);
    }
    close(c.fd);
    return NULL;
}

static void report(uint32_t *latencies, size_t done, double elapsed, long errors) {
    qsort(latencies, done, sizeof *latencies, compare);
#define AT(q) (done ? latencies[(size_t)((double)(done - 1) * (q))] : 0)
    printf("requests %zu rate %.0f p50 %u p90 %u p99 %u max %u errors %ld\n", done, (double)done / elapsed, AT(0.50),
           AT(0.90), AT(0.99), done ? latencies[done - 1] : 0, errors);
}

static int run_threads(const char *path, int count, double seconds, enum mode mode) {
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    struct worker *workers = calloc((size_t)count, sizeof *workers);
    double started = now();
    for (int i = 0; i < count; i++) {
        workers[i] = (struct worker){.path = path, .mode = mode, .deadline = started + seconds};
        pthread_create(&threads[i], NULL, work, &workers[i]);
    }
    size_t done = 0;
    long errors = 0;
    for (int i = 0; i < count; i++) {
        pthread_join(threads[i], NULL);
        done += workers[i].done;
        errors += workers[i].errors;
    }
    double elapsed = now() - started;
    uint32_t *latencies = malloc((done ? done : 1) * sizeof *latencies);
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        memcpy(latencies + at, workers[i].latencies, workers[i].done * sizeof *latencies);
        at += workers[i].done;
    }
    report(latencies, done, elapsed, errors);
    return 0;
}

int main(int argc, char **argv) {
    int threaded = argc > 1 && strcmp(argv[1], "-t") == 0;
    if (threaded) {
        argv++;
        argc--;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: %s [-t] SOCKET CONNECTIONS SECONDS line REQUEST | lines FILE | sshagent | varlink CALL\n",
                argv[0]);
        return 2;
    }
    const char *path = argv[1];
    int count = atoi(argv[2]);
    double seconds = atof(argv[3]);
    enum mode mode;
    if (strcmp(argv[4], "line") == 0 && argc == 6) {
        mode = LINE;
        add_request(argv[5], strlen(argv[5]));
    } else if (strcmp(argv[4], "lines") == 0 && argc == 6) {
        mode = LINES;
        FILE *file = fopen(argv[5], "r");
        if (!file) { perror(argv[5]); return 2; }
        char *line = NULL;
        size_t capacity = 0;
        ssize_t length;
        while ((length = getline(&line, &capacity, file)) > 0) {
            if (line[length - 1] == '\n') length--;
            if (length > 0) add_request(line, (size_t)length);
        }
        fclose(file);
        if (requestCount == 0) { fprintf(stderr, "%s has no requests\n", argv[5]); return 2; }
    } else if (strcmp(argv[4], "varlink") == 0 && argc == 6) {
        mode = LINE;
        terminator = '\0';
        add_request(argv[5], strlen(argv[5]));
    } else if (strcmp(argv[4], "sshagent") == 0) {
        mode = SSH_AGENT;
    } else {
        fprintf(stderr, "unknown mode %s\n", argv[4]);
        return 2;
    }
    if (count < 1 || seconds <= 0) { fprintf(stderr, "bad arguments\n"); return 2; }
    if (threaded) return run_threads(path, count, seconds, mode);

    int poller = epoll_create1(EPOLL_CLOEXEC);
    struct connection *connections = calloc((size_t)count, sizeof *connections);
    for (int i = 0; i < count; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        strncpy(address.sun_path, path, sizeof address.sun_path - 1);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("connect"); return 1; }
        connections[i].fd = fd;
        struct epoll_event event = {.events = EPOLLIN, .data.ptr = &connections[i]};
        epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event);
    }

    size_t capacity = 1 << 20, done = 0;
    long errors = 0;
    uint32_t *latencies = malloc(capacity * sizeof *latencies);
    static char buffer[1 << 16];
    struct epoll_event events[256];
    double started = now(), deadline = started + seconds;
    for (int i = 0; i < count; i++) if (send_request(&connections[i], mode) < 0) errors++;
    int open = count;
    while (open > 0) {
        int ready = epoll_wait(poller, events, 256, 1000);
        if (ready < 0 && errno == EINTR) continue;
        for (int e = 0; e < ready; e++) {
            struct connection *c = events[e].data.ptr;
            ssize_t n = read(c->fd, buffer, sizeof buffer);
            if (n <= 0) {
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                errors++;
                epoll_ctl(poller, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                open--;
                continue;
            }
            int complete = 0;
            if (mode == SSH_AGENT) {
                if (c->received < 4 && c->received + (size_t)n >= 4) {
                    unsigned char header[4];
                    for (size_t k = 0; k < 4; k++)
                        header[k] = k < c->received ? 0 : (unsigned char)buffer[k - c->received];
                    // The length prefix arrives in the first read in practice; a split prefix is counted as is.
                    c->expected = 4 + ((size_t)header[0] << 24 | (size_t)header[1] << 16 | (size_t)header[2] << 8 |
                                       (size_t)header[3]);
                }
                c->received += (size_t)n;
                complete = c->expected > 0 && c->received >= c->expected;
            } else {
                complete = buffer[n - 1] == terminator;
                if (complete && n >= 9 && memmem(buffer, (size_t)n, "\"error\"", 7) != NULL) errors++;
            }
            if (!complete) continue;
            double finished = now();
            if (done == capacity) {
                capacity *= 2;
                latencies = realloc(latencies, capacity * sizeof *latencies);
            }
            latencies[done++] = (uint32_t)((finished - c->sentAt) * 1e6);
            if (finished >= deadline) {
                epoll_ctl(poller, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                open--;
            } else if (send_request(c, mode) < 0) {
                errors++;
            }
        }
    }
    report(latencies, done, now() - started, errors);
    return 0;
}
