/* SPDX-License-Identifier: MIT */
/*
 * rdmacm-check: a librdmacm program of ours (linked against the system
 * librdmacm, run under efi-run) that checks what rping and ucmatose do not:
 * private data both ways, TIMEWAIT_EXIT after DISCONNECTED, reject with the
 * consumer's reason and data, a
 * port nobody listens on, an address that is no EFI interface's, a
 * non-blocking channel fd, the ports and addresses an id reports, and the
 * DISCONNECTED a server gets when its client dies.
 *
 *   rdmacm-check server ADDR PORT N   answers N requests: a request whose
 *                                     private data starts with "reject" is
 *                                     rejected, others accepted; prints one
 *                                     line per event
 *   rdmacm-check client ADDR PORT CASE   CASE: pdata reject nolistener
 *                                     addrerror hang detach
 * ADDR is IPv4 or IPv6.  "detach": connected, the client prints its pid and
 * waits for the test to detach its interface: it must see
 * RDMA_CM_EVENT_DEVICE_REMOVAL (and nothing after it but DISCONNECTED,
 * which librdmacm does not give; ours must not either).
 * Exit status 0 when every check passed; "FAIL: ..." on stderr otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__);  \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			exit(1);                                               \
		}                                                              \
	} while (0)

static const char client_pdata[] = "hello-from-client";
static const char reject_pdata[] = "reject-me";
static const char server_pdata[] = "hello-from-server";
static const char go_away[] = "go-away";

/* The next event, which must be of type want on id (NULL: any id). */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	CHECK(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
	printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
	fflush(stdout);
	CHECK(ev->event == want, "got %s (status %d), wanted %s", rdma_event_str(ev->event),
	      ev->status, rdma_event_str(want));
	return ev;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	/* NULL PD and CQs: the library's own, as rdma_create_qp allows */
	CHECK(rdma_create_qp(id, NULL, &a) == 0, "rdma_create_qp: %s", strerror(errno));
	CHECK(id->qp && id->send_cq && id->recv_cq && id->pd, "rdma_create_qp left a NULL");
	CHECK(id->verbs == id->qp->context, "the QP is not on id->verbs");
}

/* host (IPv4 or IPv6) and port into ss */
static void addr(const char *host, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		return;
	}
	CHECK(inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1, "bad address %s", host);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons((uint16_t)port);
}

/* The same address (and family), ports aside. */
static int same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

static int server(const char *host, int port, int n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen_id, *id;
	struct rdma_cm_event *ev;
	struct sockaddr_storage sin;
	int answered = 0, open = 0;

	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	CHECK(rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id: %s",
	      strerror(errno));
	addr(host, port, &sin);
	CHECK(rdma_bind_addr(listen_id, (struct sockaddr *)&sin) == 0, "rdma_bind_addr: %s",
	      strerror(errno));
	CHECK(listen_id->verbs, "a bound id has no verbs context");
	CHECK(same_addr(rdma_get_local_addr(listen_id), (struct sockaddr *)&sin), "the bound address");
	CHECK(ntohs(rdma_get_src_port(listen_id)) == port, "src port %u", ntohs(rdma_get_src_port(listen_id)));
	CHECK(rdma_listen(listen_id, 4) == 0, "rdma_listen: %s", strerror(errno));
	printf("listening\n");
	fflush(stdout);
	while (answered < n || open > 0) {
		CHECK(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
		printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
		fflush(stdout);
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			CHECK(ev->listen_id == listen_id, "listen_id");
			CHECK(id->verbs == listen_id->verbs, "the request's device");
			CHECK(rdma_get_peer_addr(id)->sa_family == sin.ss_family &&
			      rdma_get_local_addr(id)->sa_family == sin.ss_family,
			      "the request's address family");
			answered++;
			if (ev->param.conn.private_data_len >= 6 &&
			    memcmp(ev->param.conn.private_data, "reject", 6) == 0) {
				CHECK(rdma_reject(id, go_away, sizeof(go_away)) == 0, "rdma_reject: %s",
				      strerror(errno));
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				printf("rejected\n");
				break;
			}
			CHECK(ev->param.conn.private_data_len == sizeof(client_pdata) &&
			      memcmp(ev->param.conn.private_data, client_pdata, sizeof(client_pdata)) == 0,
			      "the client's private data (%u bytes)", ev->param.conn.private_data_len);
			CHECK(ev->param.conn.responder_resources == 3 && ev->param.conn.initiator_depth == 2,
			      "the client's depths %u %u", ev->param.conn.responder_resources,
			      ev->param.conn.initiator_depth);
			printf("request private data ok\n");
			make_qp(id);
			{
				struct rdma_conn_param p = {
					.private_data = server_pdata,
					.private_data_len = sizeof(server_pdata),
					.responder_resources = 2,
					.initiator_depth = 3,
				};
				CHECK(rdma_accept(id, &p) == 0, "rdma_accept: %s", strerror(errno));
			}
			rdma_ack_cm_event(ev);
			open++;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			rdma_ack_cm_event(ev);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(ev);
			rdma_destroy_qp(id);
			CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id");
			open--;
			printf("disconnected\n");
			break;
		default:
			CHECK(0, "unexpected %s", rdma_event_str(ev->event));
		}
		fflush(stdout);
	}
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	printf("server done\n");
	return 0;
}

/* addr + route resolution; 0, or the status of ADDR_ERROR */
static int resolve(struct rdma_event_channel *ch, struct rdma_cm_id *id, const char *host, int port)
{
	struct rdma_cm_event *ev;
	struct sockaddr_storage dst;
	int status;

	addr(host, port, &dst);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0, "rdma_resolve_addr: %s",
	      strerror(errno));
	CHECK(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event");
	printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
	if (ev->event == RDMA_CM_EVENT_ADDR_ERROR) {
		status = ev->status;
		rdma_ack_cm_event(ev);
		return status;
	}
	CHECK(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED, "%s", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	CHECK(id->verbs, "no verbs context after ADDR_RESOLVED");
	CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return 0;
}

static int client(const char *host, int port, const char *c)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param p = { .responder_resources = 3, .initiator_depth = 2 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct pollfd pfd;
	int flags;

	CHECK(ch, "rdma_create_event_channel: %s", strerror(errno));
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id: %s", strerror(errno));
	/* EFI has RC only: librdmacm's UD port space is not served */
	{
		struct rdma_cm_id *ud;

		CHECK(rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP) == -1 && errno == EOPNOTSUPP,
		      "RDMA_PS_UDP: wanted EOPNOTSUPP");
	}
	if (strcmp(c, "addrerror") == 0) {
		int status = resolve(ch, id, host, port);

		CHECK(status < 0, "wanted ADDR_ERROR for %s", host);
		printf("addr error %s\n", strerror(-status));
		goto done;
	}
	CHECK(resolve(ch, id, host, port) == 0, "resolving %s", host);
	CHECK(ntohs(rdma_get_dst_port(id)) == port, "dst port %u", ntohs(rdma_get_dst_port(id)));
	CHECK(rdma_get_src_port(id) != 0, "no src port");
	{
		struct sockaddr_storage want;

		addr(host, port, &want);
		CHECK(same_addr(rdma_get_peer_addr(id), (struct sockaddr *)&want), "peer addr");
		CHECK(rdma_get_local_addr(id)->sa_family == want.ss_family, "local address family");
	}
	make_qp(id);
	/* a non-blocking channel says EAGAIN when nothing waits */
	flags = fcntl(ch->fd, F_GETFL);
	CHECK(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) == 0, "O_NONBLOCK");
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN, "wanted EAGAIN");
	if (strcmp(c, "reject") == 0) {
		p.private_data = reject_pdata;
		p.private_data_len = sizeof(reject_pdata);
	} else {
		p.private_data = client_pdata;
		p.private_data_len = sizeof(client_pdata);
	}
	CHECK(rdma_connect(id, &p) == 0, "rdma_connect: %s", strerror(errno));
	/* the outcome makes the fd readable */
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 60000) == 1, "the channel fd never became readable");
	fcntl(ch->fd, F_SETFL, flags);
	if (strcmp(c, "reject") == 0) {
		ev = expect(ch, RDMA_CM_EVENT_REJECTED);
		CHECK(ev->status == 28, "reject status %d, wanted 28 (consumer defined)", ev->status);
		CHECK(ev->param.conn.private_data_len == sizeof(go_away) &&
		      memcmp(ev->param.conn.private_data, go_away, sizeof(go_away)) == 0,
		      "the reject's private data (%u bytes)", ev->param.conn.private_data_len);
		printf("rejected with reason and data\n");
		rdma_ack_cm_event(ev);
	} else if (strcmp(c, "nolistener") == 0) {
		CHECK(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event");
		printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
		CHECK(ev->event == RDMA_CM_EVENT_REJECTED || ev->event == RDMA_CM_EVENT_UNREACHABLE,
		      "wanted REJECTED or UNREACHABLE, got %s", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	} else {
		ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
		CHECK(ev->param.conn.private_data_len == sizeof(server_pdata) &&
		      memcmp(ev->param.conn.private_data, server_pdata, sizeof(server_pdata)) == 0,
		      "the server's private data (%u bytes)", ev->param.conn.private_data_len);
		CHECK(ev->param.conn.responder_resources == 2 && ev->param.conn.initiator_depth == 3,
		      "the server's depths");
		printf("accept private data ok\n");
		rdma_ack_cm_event(ev);
		fflush(stdout);
		if (strcmp(c, "hang") == 0) {
			printf("pid %d\n", (int)getpid());
			fflush(stdout);
			for (;;)
				pause();	/* the test kills us */
		}
		if (strcmp(c, "detach") == 0) {
			printf("pid %d\n", (int)getpid());
			fflush(stdout);
			/* the test detaches our interface now */
			rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DEVICE_REMOVAL));
			printf("device removal\n");
			/* librdmacm gives nothing more; the program destroys
			 * the id (a QP on a removed device cannot connect) */
			flags = fcntl(ch->fd, F_GETFL);
			fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK);
			pfd.fd = ch->fd;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, 500) == 1 && rdma_get_cm_event(ch, &ev) == 0)
				CHECK(0, "%s after DEVICE_REMOVAL", rdma_event_str(ev->event));
			rdma_destroy_qp(id);
			goto done;
		}
		CHECK(rdma_disconnect(id) == 0, "rdma_disconnect: %s", strerror(errno));
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		/* the QP's timewait is over some time later, as with the
		 * kernel's CM; the QP may go only then */
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT));
	}
	rdma_destroy_qp(id);
done:
	CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	printf("client %s done\n", c);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && strcmp(argv[1], "server") == 0)
		return server(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 5 && strcmp(argv[1], "client") == 0)
		return client(argv[2], atoi(argv[3]), argv[4]);
	fprintf(stderr, "usage: rdmacm-check server ADDR PORT N | client ADDR PORT CASE\n");
	return 2;
}
