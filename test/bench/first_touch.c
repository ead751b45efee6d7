/* How long the first write to fresh anonymous memory takes, on 4 KB pages and on transparent huge
 * pages (the join copies its input into fresh memory; on some virtual machines that first touch
 * dominates). Build and run: cc -O2 -o /tmp/first_touch test/bench/first_touch.c && /tmp/first_touch 1024
 * Each round maps MB megabytes, writes one byte per 4 KB, unmaps, and sleeps PAUSE seconds (default
 * 5) so that a host that reclaims freed guest memory has done so before the next round. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Maps bytes, advises huge pages or not, touches every 4 KB page once; returns the seconds taken. */
static double touch(size_t bytes, int huge) {
    double t0 = seconds();
    char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    double t = seconds() - t0;
    munmap(p, bytes);
    return t;
}

int main(int argc, char** argv) {
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    unsigned pause = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
    for (int round = 0; round < 2; ++round)
        for (int huge = 0; huge <= 1; ++huge) {
            sleep(pause);
            double t = touch(mb << 20, huge);
            printf("%s pages: %zu MB first touched in %.3f s (%.2f s per GB)\n", huge ? "huge" : "4 KB", mb, t,
                   t * 1024.0 / (double)mb);
            fflush(stdout);
        }
    return 0;
}
