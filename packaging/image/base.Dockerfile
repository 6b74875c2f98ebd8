# deckhand/base: a Debian minbase root file system (scripts/image.sh builds
# it with mmdebstrap and imports it; no registry is involved) with the
# agent as PID 1. The agent runs as root (egress needs CAP_NET_ADMIN);
# what it starts for its users runs as `user` (DECKHAND_RUN_AS), whose home
# /home/user is where the workspace volume mounts. The agent keeps
# OpenSSH's sshd running (DECKHAND_SSHD) on the container's loopback port
# 22 for ssh through the tunnel, key logins only; the host keys the
# package made are removed, each container makes its own on first start.
# `user`'s password is `*` (no password login) rather than useradd's `!`,
# which sshd without PAM takes for a locked account and refuses every key.
ARG ROOTFS
FROM ${ROOTFS}
RUN groupadd --gid 1000 user \
 && useradd --uid 1000 --gid 1000 --home-dir /home/user --create-home --shell /bin/bash user \
 && usermod -p '*' user \
 && rm -f /etc/ssh/ssh_host_* \
 && install -d -m 0700 /var/lib/deckhand
COPY root/ /
ENV LANG=C.UTF-8 SHELL=/bin/bash DECKHAND_RUN_AS=user DECKHAND_SSHD=/usr/sbin/sshd
WORKDIR /home/user
EXPOSE 7700
STOPSIGNAL SIGTERM
# deckhand as PID 1 becomes the container's init and runs the agent under
# it. The gateway listens on every address of the container; the services
# on loopback.
ENTRYPOINT ["/usr/bin/deckhand"]
CMD ["run", "--listen", "0.0.0.0:7700", "--data", "/var/lib/deckhand"]
ARG VERSION=dev
LABEL org.opencontainers.image.title="deckhand base" org.opencontainers.image.version=${VERSION} deckhand.image=base
