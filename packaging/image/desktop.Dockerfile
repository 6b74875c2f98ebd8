# deckhand/desktop: base's userland plus an X desktop the agent's daemon
# service keeps running as `user`: Xvfb on :99, openbox, a session D-Bus
# at /run/user/1000/bus and the accessibility bus (at-spi-bus-launcher),
# so the display service's screen and accessibility tree work at once.
# The root file system is its own mmdebstrap (base.packages plus
# desktop.packages); the steps below match base.Dockerfile's. The session
# bus does not start the accessibility bus on demand (its D-Bus service
# file is removed): the daemon's launcher is the one owner, supervised, and
# a client asking before it runs (the display service at start) retries
# instead of starting a second launcher that would make the daemon's exit.
ARG ROOTFS
FROM ${ROOTFS}
RUN groupadd --gid 1000 user \
 && useradd --uid 1000 --gid 1000 --home-dir /home/user --create-home --shell /bin/bash user \
 && usermod -p '*' user \
 && rm -f /etc/ssh/ssh_host_* \
 && install -d -m 0700 /var/lib/deckhand \
 && install -d -m 0700 -o user -g user /run/user/1000 \
 && install -d -m 1777 /tmp/.X11-unix \
 && rm -f /usr/share/dbus-1/services/org.a11y.Bus.service
COPY root/ /
ENV LANG=C.UTF-8 SHELL=/bin/bash DECKHAND_RUN_AS=user DECKHAND_SSHD=/usr/sbin/sshd DISPLAY=:99 XDG_RUNTIME_DIR=/run/user/1000 \
    DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus
WORKDIR /home/user
EXPOSE 7700
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/deckhand"]
CMD ["run", "--listen", "0.0.0.0:7700", "--data", "/var/lib/deckhand"]
ARG VERSION=dev
LABEL org.opencontainers.image.title="deckhand desktop" org.opencontainers.image.version=${VERSION} deckhand.image=desktop
