// Preloaded with `node --require ./loopback.cjs` into a server that calls
// `listen(port)` without a host (server-everything's streamableHttp does:
// `app.listen(process.env.PORT || 3001)`, which would bind every interface).
// Binds it to 127.0.0.1 only, and prints the bound address on stderr as
// `loopback: listening http://127.0.0.1:PORT` (PORT=0 picks a free port).
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    const port = args[0];
    const isPort = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
    if (isPort && typeof args[1] !== "string") {
        args.splice(1, 0, "127.0.0.1");
        this.once("listening", () => {
            const a = this.address();
            process.stderr.write(`loopback: listening http://${a.address}:${a.port}\n`);
        });
    }
    return listen.apply(this, args);
};
