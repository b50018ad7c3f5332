/* SPDX-License-Identifier: MIT */
/*
 * ctlraw: talks to efid's control socket with hand-made frames, most of them
 * malformed on purpose, for the hostile-client and slow-client integration
 * tests.  It builds every byte itself instead of using ctlmsg.c, because the
 * point is to send what a well-behaved codec never would.
 *
 *   ctlraw SOCKET CASE [INSTANCE [ADDRESS]]
 *
 * For the malformed cases the exit status says whether efid behaved:
 *   0  efid answered with an error reply (negative EFI_A_STATUS) or closed
 *      the connection, within the timeout
 *   1  efid accepted the request (status >= 0), sent a malformed reply, or
 *      neither answered nor closed within the timeout (a hang)
 *   2  usage error, or the socket could not be reached at all
 * "hello" and "list" expect a successful reply instead; "fds" any answer or a close.  "truncated", "flood", "slow",
 * "idle" and "no-read" expect nothing and exit 0 once they have done their
 * part.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctlproto.h"

#define HDR_SIZE 16u
#define REPLY_TIMEOUT_MS 3000

/* A frame under construction; fixed size is plenty for these cases except
 * the oversized one, which is sent in pieces. */
struct frame {
	uint8_t buf[4096];
	size_t len;
};

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

/* Starts a frame with an arbitrary header; the length is filled by
 * frame_end() unless the case wants to lie about it. */
static void frame_begin(struct frame *f, uint32_t magic, uint16_t version, uint16_t type)
{
	memset(f, 0, sizeof(*f));
	put32(f->buf, magic);
	put16(f->buf + 4, version);
	put16(f->buf + 6, type);
	put32(f->buf + 12, 42); /* seq */
	f->len = HDR_SIZE;
}

/* Appends an attribute whose header claims hdr_len bytes while only
 * value_len bytes follow (equal for honest attributes). */
static void frame_attr_raw(struct frame *f, uint16_t type, uint16_t hdr_len, const void *value,
			   size_t value_len)
{
	put16(f->buf + f->len, type);
	put16(f->buf + f->len + 2, hdr_len);
	memcpy(f->buf + f->len + 4, value, value_len);
	f->len += 4 + ((value_len + 3) & ~(size_t)3);
}

static void frame_attr(struct frame *f, uint16_t type, const void *value, size_t len)
{
	frame_attr_raw(f, type, (uint16_t)len, value, len);
}

static void frame_str(struct frame *f, uint16_t type, const char *s)
{
	frame_attr(f, type, s, strlen(s) + 1);
}

static void frame_end(struct frame *f)
{
	put32(f->buf + 8, (uint32_t)(f->len - HDR_SIZE));
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "ctlraw: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("ctlraw: socket");
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "ctlraw: connect %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Writes everything; returns 0, or -errno (EPIPE/ECONNRESET mean efid closed
 * on us, which for a malformed frame is a fine answer). */
static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads exactly len bytes within the deadline.  Returns len, 0 on EOF before
 * the first byte, -ETIMEDOUT, -EPROTO on EOF mid-way, or -errno. */
static ssize_t read_exact(int fd, uint8_t *buf, size_t len, int timeout_ms)
{
	size_t got = 0;
	while (got < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = poll(&pfd, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		ssize_t n = recv(fd, buf + got, len - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return got == 0 ? 0 : -EPROTO;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

enum outcome { OUT_ERROR_REPLY, OUT_OK_REPLY, OUT_CLOSED, OUT_TIMEOUT, OUT_BAD_REPLY };

/* Waits for efid's answer and says what it was, printing one line. */
static enum outcome await_reply(int fd)
{
	uint8_t hdr[HDR_SIZE];
	ssize_t n = read_exact(fd, hdr, sizeof(hdr), REPLY_TIMEOUT_MS);
	if (n == 0 || n == -ECONNRESET) {
		printf("closed\n");
		return OUT_CLOSED;
	}
	if (n == -ETIMEDOUT) {
		printf("timeout: no reply and connection still open after %d ms\n",
		       REPLY_TIMEOUT_MS);
		return OUT_TIMEOUT;
	}
	if (n < 0) {
		printf("bad reply: %s\n", strerror((int)-n));
		return OUT_BAD_REPLY;
	}
	uint32_t magic = get32(hdr), length = get32(hdr + 8);
	uint16_t version = get16(hdr + 4), type = get16(hdr + 6);
	if (magic != EFI_CTL_MAGIC || version != EFI_CTL_VERSION || type != EFI_CTL_REPLY ||
	    length > EFI_CTL_MAX_PAYLOAD) {
		printf("bad reply header: magic=%#x version=%u type=%#x length=%" PRIu32 "\n",
		       magic, version, type, length);
		return OUT_BAD_REPLY;
	}
	uint8_t *payload = malloc(length ? length : 1);
	if (!payload) {
		printf("bad reply: out of memory\n");
		return OUT_BAD_REPLY;
	}
	n = read_exact(fd, payload, length, REPLY_TIMEOUT_MS);
	if (length > 0 && n != (ssize_t)length) {
		printf("bad reply: payload truncated\n");
		free(payload);
		return OUT_BAD_REPLY;
	}
	bool have_status = false;
	int32_t status = 0;
	const char *error = NULL;
	for (size_t off = 0; off + 4 <= length;) {
		uint16_t atype = get16(payload + off), alen = get16(payload + off + 2);
		if (off + 4 + alen > length)
			break;
		const uint8_t *val = payload + off + 4;
		if (atype == EFI_A_STATUS && alen == 4) {
			status = (int32_t)get32(val);
			have_status = true;
		} else if (atype == EFI_A_ERROR && alen > 0 && val[alen - 1] == '\0') {
			error = (const char *)val;
		}
		off += 4 + (((size_t)alen + 3) & ~(size_t)3);
	}
	if (!have_status) {
		printf("bad reply: no EFI_A_STATUS\n");
		free(payload);
		return OUT_BAD_REPLY;
	}
	printf("reply status=%" PRId32 " (%s) error=\"%s\"\n", status,
	       status < 0 ? strerror(-status) : "ok", error ? error : "");
	free(payload);
	return status < 0 ? OUT_ERROR_REPLY : OUT_OK_REPLY;
}

static void random_bytes(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(rand() & 0xff);
	/* Never let random bytes form a valid magic by chance. */
	if (len >= 4 && get32(buf) == EFI_CTL_MAGIC)
		buf[0] ^= 0xff;
}

/* The semi-valid ATTACH body the malformed cases start from: it names a real
 * instance and a free address, so a server that acted on a prefix of the
 * message would create something the test then finds. */
static void attach_prefix(struct frame *f, const char *instance, const char *address)
{
	frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_ATTACH);
	frame_str(f, EFI_A_INSTANCE, instance);
	frame_str(f, EFI_A_ADDRESS, address);
}

/* Builds the frame for a one-shot malformed case.  Returns false when the
 * case is unknown. */
static bool build_case(const char *name, const char *instance, const char *address,
		       struct frame *f)
{
	if (!strcmp(name, "hello")) {
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_HELLO);
		frame_str(f, EFI_A_CLIENT, "ctlraw");
	} else if (!strcmp(name, "list")) {
		/* a LIST as clients from before paging send it (libefi does) */
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_LIST);
	} else if (!strcmp(name, "garbage")) {
		f->len = 64;
		random_bytes(f->buf, f->len);
		return true;
	} else if (!strcmp(name, "bad-magic")) {
		frame_begin(f, 0xdeadbeef, EFI_CTL_VERSION, EFI_CTL_HELLO);
	} else if (!strcmp(name, "bad-version")) {
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION + 1, EFI_CTL_HELLO);
	} else if (!strcmp(name, "unknown-type")) {
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, 0x7777);
	} else if (!strcmp(name, "reply-type")) {
		/* a client sending a REPLY is as wrong as an unknown type */
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_REPLY);
	} else if (!strcmp(name, "attr-overrun")) {
		attach_prefix(f, instance, address);
		frame_attr_raw(f, EFI_A_IFNAME, 200, "efi9", 5);
	} else if (!strcmp(name, "attr-short-header")) {
		/* two bytes of an attribute header at the end of the payload */
		attach_prefix(f, instance, address);
		frame_str(f, EFI_A_IFNAME, "efi9");
		f->buf[f->len] = EFI_A_MTU;
		f->len += 2;
	} else if (!strcmp(name, "str-no-nul")) {
		attach_prefix(f, instance, address);
		frame_attr(f, EFI_A_IFNAME, "efi9", 4);
	} else if (!strcmp(name, "str-embedded-nul")) {
		attach_prefix(f, instance, address);
		frame_attr(f, EFI_A_IFNAME, "ef\0i9", 6);
	} else if (!strcmp(name, "u32-wrong-size")) {
		attach_prefix(f, instance, address);
		frame_str(f, EFI_A_IFNAME, "efi9");
		frame_attr(f, EFI_A_MTU, "\x00\x05", 2);
	} else if (!strcmp(name, "repeated-attr")) {
		attach_prefix(f, instance, address);
		frame_str(f, EFI_A_IFNAME, "efi9");
		frame_str(f, EFI_A_IFNAME, "efi8");
	} else if (!strcmp(name, "huge-name")) {
		char big[300];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		attach_prefix(f, instance, address);
		frame_str(f, EFI_A_IFNAME, big);
	} else if (!strcmp(name, "too-many-addresses")) {
		/* more addresses than an interface may have (EFI_MAX_ADDRS) */
		attach_prefix(f, instance, address);
		frame_str(f, EFI_A_IFNAME, "efi9");
		for (int i = 0; i < 100; i++) {
			char a[32];
			snprintf(a, sizeof(a), "10.254.%d.%d/24", i / 200, i % 200 + 1);
			frame_str(f, EFI_A_ADDRESS, a);
		}
	} else if (!strcmp(name, "missing-attrs")) {
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_ATTACH);
	} else if (!strcmp(name, "missing-address")) {
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_ATTACH);
		frame_str(f, EFI_A_INSTANCE, instance);
		frame_str(f, EFI_A_IFNAME, "efi9");
	} else if (!strcmp(name, "list-bad-instance")) {
		/* an instance name that would walk out of /run/netns */
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_LIST);
		frame_str(f, EFI_A_INSTANCE, "../../etc");
	} else if (!strcmp(name, "publish-no-fd")) {
		/* PUBLISH_COUNTERS without its descriptor, and without an endpoint */
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_PUBLISH_COUNTERS);
	} else if (!strcmp(name, "detach-missing-attrs")) {
		frame_begin(f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_DETACH);
	} else if (!strcmp(name, "length-lies-short")) {
		/* the header says 4 bytes while a full attach follows: the rest
		 * must be read as a new (garbage) frame, not as part of this one */
		attach_prefix(f, instance, address);
		frame_str(f, EFI_A_IFNAME, "efi9");
		put32(f->buf + 8, 4);
		return true;
	} else {
		return false;
	}
	frame_end(f);
	return true;
}

/* A header announcing more than a server accepts; the payload is sent too
 * (as far as efid keeps reading) so a server that buffers it is caught. */
static int run_oversize(const char *path, bool send_payload)
{
	int fd = connect_to(path);
	if (fd < 0)
		return 2;
	struct frame f;
	frame_begin(&f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_LIST);
	put32(f.buf + 8, EFI_CTL_MAX_REQUEST + 1);
	int r = write_all(fd, f.buf, HDR_SIZE);
	if (r == 0 && send_payload) {
		static uint8_t junk[EFI_CTL_MAX_REQUEST + 1];
		/* best effort: efid may close mid-way */
		(void)write_all(fd, junk, sizeof(junk));
	}
	enum outcome o = await_reply(fd);
	close(fd);
	return o == OUT_ERROR_REPLY || o == OUT_CLOSED ? 0 : 1;
}

/* Many short-lived connections, each sending a few random bytes and closing
 * without waiting: leaks of fds or memory per connection show up here. */
static int run_flood(const char *path, long count)
{
	for (long i = 0; i < count; i++) {
		int fd = connect_to(path);
		if (fd < 0)
			return 2;
		uint8_t junk[16];
		size_t len = 1 + (size_t)(rand() % 15);
		random_bytes(junk, len);
		(void)write_all(fd, junk, len);
		close(fd);
	}
	printf("sent %ld garbage connections\n", count);
	return 0;
}

/* Half a header, then silence: efid must keep serving everybody else. */
static int run_slow(const char *path, long seconds)
{
	int fd = connect_to(path);
	if (fd < 0)
		return 2;
	struct frame f;
	frame_begin(&f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_LIST);
	frame_end(&f);
	if (write_all(fd, f.buf, HDR_SIZE / 2) < 0) {
		close(fd);
		return 1;
	}
	printf("slow client connected, sent %u bytes, sleeping %lds\n", HDR_SIZE / 2, seconds);
	fflush(stdout);
	sleep((unsigned)seconds);
	close(fd);
	return 0;
}

/* Many valid LIST requests in a row, replies never read: efid's replies pile
 * up in the socket buffer, and a server that writes with blocking calls (or
 * buffers without bound) stops serving everybody else. */
static int run_no_read(const char *path, long count, long seconds)
{
	int fd = connect_to(path);
	if (fd < 0)
		return 2;
	struct frame f;
	frame_begin(&f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_LIST);
	frame_end(&f);
	long sent = 0;
	for (; sent < count; sent++) {
		/* do not block: once efid stops reading, we are done pushing */
		ssize_t n = send(fd, f.buf, f.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n != (ssize_t)f.len)
			break;
	}
	printf("sent %ld LIST requests without reading a reply, holding %lds\n", sent, seconds);
	fflush(stdout);
	sleep((unsigned)seconds);
	close(fd);
	return 0;
}

/* A LIST request carrying descriptors nobody asked for (more than a message
 * may carry when count > EFI_CTL_MAX_FDS): efid must close every one it
 * received, or each such request leaks them.  Any answer or a close is fine;
 * a hang is not. */
static int run_fds(const char *path, long count)
{
	if (count < 1 || count > 250)
		return 2;
	int fd = connect_to(path);
	if (fd < 0)
		return 2;
	int fds[250];
	for (long i = 0; i < count; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct frame f;
	frame_begin(&f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_LIST);
	frame_end(&f);
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 250)];
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = { .iov_base = f.buf, .iov_len = f.len };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)count);
	ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	for (long i = 0; i < count; i++)
		close(fds[i]);
	if (n < 0) {
		printf("sendmsg with %ld fds: %s\n", count, strerror(errno));
		close(fd);
		return 2;
	}
	enum outcome o = await_reply(fd);
	close(fd);
	return o == OUT_TIMEOUT || o == OUT_BAD_REPLY ? 1 : 0;
}

/* Connections that send nothing at all, held open. */
static int run_idle(const char *path, long count, long seconds)
{
	int *fds = calloc((size_t)count, sizeof(int));
	if (!fds)
		return 2;
	long opened = 0;
	for (; opened < count; opened++) {
		fds[opened] = connect_to(path);
		if (fds[opened] < 0)
			break;
	}
	printf("holding %ld idle connections for %lds\n", opened, seconds);
	fflush(stdout);
	sleep((unsigned)seconds);
	for (long i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	return opened == count ? 0 : 2;
}

/* N connections held open, made without blocking (a connect that would wait
 * for efid's backlog counts as refused).  With K > 0 each one sends the
 * first byte of a header and K descriptors with it, so efid holds them for
 * a request that never completes.  After a second it counts the ones efid
 * closed (refused over a limit), prints "opened O refused R closed C",
 * holds the rest for SECONDS (or until SIGTERM) and closes them all at once. */
static volatile sig_atomic_t hold_stop;
static void on_hold_term(int sig)
{
	(void)sig;
	hold_stop = 1;
}

static int run_hold(const char *path, long count, long seconds, long nfds)
{
	struct rlimit rl;
	if (count < 1 || nfds < 0 || nfds > EFI_CTL_MAX_FDS)
		return 2;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, path);
	int *fds = calloc((size_t)count, sizeof(int));
	if (!fds)
		return 2;
	int dn = open("/dev/null", O_RDONLY | O_CLOEXEC);
	long opened = 0, refused = 0, closed = 0, refused_run = 0;
	for (long i = 0; i < count; i++) {
		fds[i] = -1;
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			break; /* our own limit */
		/* A full backlog (EAGAIN) is efid being slower than us: wait
		 * for it a little, but give up waiting after a run of refusals
		 * (efid no longer accepting at all). */
		int r, tries = 0;
		while ((r = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EAGAIN &&
		       tries++ < (refused_run < 10 ? 200 : 2))
			usleep(1000);
		if (r < 0) {
			close(fd);
			refused++;
			refused_run++;
			continue;
		}
		refused_run = 0;
		if (nfds > 0) {
			uint8_t byte = (uint8_t)(EFI_CTL_MAGIC & 0xff);
			union {
				struct cmsghdr align;
				char buf[CMSG_SPACE(sizeof(int) * EFI_CTL_MAX_FDS)];
			} u;
			memset(&u, 0, sizeof(u));
			struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
			struct msghdr mh = {
				.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
				.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds),
			};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			for (long k = 0; k < nfds; k++)
				memcpy(CMSG_DATA(cm) + k * sizeof(int), &dn, sizeof(int));
			(void)sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		fds[i] = fd;
		opened++;
	}
	sleep(1);
	for (long i = 0; i < count; i++) {
		if (fds[i] < 0)
			continue;
		struct pollfd pfd = { .fd = fds[i], .events = POLLIN };
		char b[64];
		if (poll(&pfd, 1, 0) == 1 &&
		    ((pfd.revents & (POLLHUP | POLLERR)) || recv(fds[i], b, sizeof(b), MSG_DONTWAIT) == 0))
			closed++;
	}
	printf("opened %ld refused %ld closed %ld\n", opened, refused, closed);
	fflush(stdout);
	signal(SIGTERM, on_hold_term);
	for (long t = 0; t < seconds * 10 && !hold_stop; t++)
		usleep(100000);
	for (long i = 0; i < count; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (dn >= 0)
		close(dn);
	free(fds);
	return 0;
}

/* Reads one reply frame, closing any descriptors that came with it.
 * Returns its EFI_A_STATUS (0 or a negative errno), or 1 on a broken
 * connection. */
static int read_status_reply(int fd)
{
	uint8_t hdr[HDR_SIZE];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * EFI_CTL_MAX_FDS)];
	} u;
	struct iovec iov = { .iov_base = hdr, .iov_len = sizeof(hdr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof(hdr))
		return 1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int x;
				memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				close(x);
			}
	uint32_t length = get32(hdr + 8);
	if (length > EFI_CTL_MAX_PAYLOAD)
		return 1;
	uint8_t *payload = malloc(length ? length : 1);
	if (!payload || read_exact(fd, payload, length, 30000) != (ssize_t)length) {
		free(payload);
		return 1;
	}
	int32_t status = 1;
	for (size_t off = 0; off + 4 <= length;) {
		uint16_t atype = get16(payload + off), alen = get16(payload + off + 2);
		if (off + 4 + alen > length)
			break;
		if (atype == EFI_A_STATUS && alen == 4) {
			memcpy(&status, payload + off + 4, 4);
			status = (int32_t)le32toh((uint32_t)status);
			break;
		}
		off += 4 + (((size_t)alen + 3) & ~(size_t)3);
	}
	free(payload);
	return status;
}

/* Leases every slot of IFNAME's instance (OPEN_DEVICE, 16 per connection,
 * until efid says no), then sends COUNT more OPEN_DEVICE requests in a row
 * on one connection and reads their (failing) replies; prints "leased L
 * failed F", holds everything SECONDS (or until SIGTERM). */
static int run_slots(const char *path, const char *ifname, long count, long seconds)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct frame f;
	frame_begin(&f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_OPEN_DEVICE);
	frame_str(&f, EFI_A_IFNAME, ifname);
	frame_end(&f);
	int conns[512];
	long nconns = 0, leased = 0, failed = 0;
	bool full = false;
	while (!full && nconns < (long)(sizeof(conns) / sizeof(conns[0]))) {
		int fd = connect_to(path);
		if (fd < 0)
			return 2;
		conns[nconns++] = fd;
		for (int i = 0; i < 16 && !full; i++) {
			if (write_all(fd, f.buf, f.len) < 0)
				return 1;
			int st = read_status_reply(fd);
			if (st == 1)
				return 1;
			if (st < 0)
				full = true;
			else
				leased++;
		}
	}
	int fd = connect_to(path);
	if (fd < 0)
		return 2;
	for (long i = 0; i < count; i++)
		if (write_all(fd, f.buf, f.len) < 0)
			return 1;
	for (long i = 0; i < count; i++) {
		int st = read_status_reply(fd);
		if (st == 1)
			return 1;
		failed += st < 0;
	}
	printf("leased %ld failed %ld\n", leased, failed);
	fflush(stdout);
	signal(SIGTERM, on_hold_term);
	for (long t = 0; t < seconds * 10 && !hold_stop; t++)
		usleep(100000);
	close(fd);
	for (long i = 0; i < nconns; i++)
		close(conns[i]);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ctlraw SOCKET CASE [INSTANCE [ADDRESS]]\n"
		"  one frame, error reply or close expected: garbage bad-magic bad-version\n"
		"    unknown-type reply-type attr-overrun attr-short-header str-no-nul\n"
		"    str-embedded-nul u32-wrong-size repeated-attr huge-name too-many-addresses\n"
		"    missing-attrs\n"
		"    missing-address detach-missing-attrs length-lies-short oversize oversize-full\n"
		"    list-bad-instance publish-no-fd\n"
		"  success expected: hello list\n"
		"  any answer (or a close) expected: fds N (LIST carrying N descriptors)\n"
		"  no answer expected: truncated | flood N | slow SECONDS | idle N SECONDS\n"
		"    | no-read N SECONDS | hold N SECONDS [FDS] | slots IFNAME COUNT SECONDS\n");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	const char *path = argv[1], *name = argv[2];
	const char *instance = argc > 3 ? argv[3] : "nosuchinstance";
	const char *address = argc > 4 ? argv[4] : "10.255.255.9/24";

	if (!strcmp(name, "oversize") || !strcmp(name, "oversize-full"))
		return run_oversize(path, !strcmp(name, "oversize-full"));
	if (!strcmp(name, "flood"))
		return run_flood(path, argc > 3 ? strtol(argv[3], NULL, 10) : 1000);
	if (!strcmp(name, "slow"))
		return run_slow(path, argc > 3 ? strtol(argv[3], NULL, 10) : 10);
	if (!strcmp(name, "no-read"))
		return run_no_read(path, argc > 3 ? strtol(argv[3], NULL, 10) : 10000,
				   argc > 4 ? strtol(argv[4], NULL, 10) : 5);
	if (!strcmp(name, "fds"))
		return run_fds(path, argc > 3 ? strtol(argv[3], NULL, 10) : 16);
	if (!strcmp(name, "idle"))
		return run_idle(path, argc > 3 ? strtol(argv[3], NULL, 10) : 10,
				argc > 4 ? strtol(argv[4], NULL, 10) : 5);
	if (!strcmp(name, "hold"))
		return run_hold(path, argc > 3 ? strtol(argv[3], NULL, 10) : 10,
				argc > 4 ? strtol(argv[4], NULL, 10) : 5,
				argc > 5 ? strtol(argv[5], NULL, 10) : 0);
	if (!strcmp(name, "slots"))
		return run_slots(path, argc > 3 ? argv[3] : "efi0",
				 argc > 4 ? strtol(argv[4], NULL, 10) : 1000,
				 argc > 5 ? strtol(argv[5], NULL, 10) : 5);
	if (!strcmp(name, "truncated")) {
		int fd = connect_to(path);
		if (fd < 0)
			return 2;
		struct frame f;
		frame_begin(&f, EFI_CTL_MAGIC, EFI_CTL_VERSION, EFI_CTL_ATTACH);
		frame_str(&f, EFI_A_INSTANCE, instance);
		frame_end(&f);
		(void)write_all(fd, f.buf, f.len - 3);
		close(fd);
		printf("sent %zu of %zu bytes and closed\n", f.len - 3, f.len);
		return 0;
	}

	struct frame f;
	if (!build_case(name, instance, address, &f)) {
		fprintf(stderr, "ctlraw: unknown case '%s'\n", name);
		usage();
		return 2;
	}
	int fd = connect_to(path);
	if (fd < 0)
		return 2;
	int r = write_all(fd, f.buf, f.len);
	enum outcome o = await_reply(fd);
	close(fd);
	if (r < 0 && o != OUT_CLOSED)
		printf("write failed: %s\n", strerror(-r));
	if (!strcmp(name, "hello") || !strcmp(name, "list"))
		return o == OUT_OK_REPLY ? 0 : 1;
	return o == OUT_ERROR_REPLY || o == OUT_CLOSED ? 0 : 1;
}
