# A static busybox and nothing else: enough for containers that only need to exist (audit) or run sh/df.
FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
CMD ["sh"]
