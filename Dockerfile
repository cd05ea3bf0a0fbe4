# Apollo-11 in a container: `docker build -t apollo11 .` then
#   docker run -v apollo11-state:/var/lib/apollo11 -p 127.0.0.1:7012:7012 apollo11 --role=all
# Stage 1 builds the .deb exactly as on a Debian 12 machine; stage 2 installs
# it on a slim Debian 12 and runs apollo11-node as a non-root user. Every
# node flag may also be given as APOLLO11_<FLAG> (docker run -e). See
# docs/operations.md, "Running in a container".

FROM debian:12 AS build
WORKDIR /src
COPY scripts/setup.sh scripts/setup.sh
RUN bash scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAPOLLO11_BUILD_TESTS=OFF \
 && cmake --build build --target apollo11 apollo11-node apollo11_man \
 && cd build && cpack -G DEB -B /out

FROM debian:12-slim
COPY --from=build /out/apollo11_*.deb /tmp/
RUN apt-get update \
 && apt-get install -y --no-install-recommends /tmp/apollo11_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/apollo11_*.deb \
 && useradd --system --home-dir /var/lib/apollo11 --shell /usr/sbin/nologin apollo11 \
 && install -d -o apollo11 -g apollo11 -m 0750 /var/lib/apollo11
USER apollo11
# The journal, task logs and node logs; keep it on a volume.
VOLUME /var/lib/apollo11
ENV APOLLO11_STATE_DIR=/var/lib/apollo11 \
    APOLLO11_LOG_FORMAT=json
# Workers (7011), clients (7012), HTTP /metrics and API (8011). Inside a
# container the node must bind 0.0.0.0 to be reachable, which it refuses
# without CURVE keys or --insecure (and HTTP without --api-token).
EXPOSE 7011 7012 8011
ENTRYPOINT ["apollo11-node", "start"]
CMD ["--role=all"]
