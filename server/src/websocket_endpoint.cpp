// WsEndpoint over websocketpp's Asio transport (websocket_endpoint.h). Compiled as C++17.
//
// The rest of the server builds with ASIO_NO_DEPRECATED; websocketpp 0.8 still names
// io_service, so this translation unit is built without it. That only adds declarations (no
// class changes layout): the io_context shared with the rest of the server is the same object.
#include "websocket_endpoint.h"

#include <map>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/server.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace lockstep::server {

namespace {
using WsServer = websocketpp::server<websocketpp::config::asio>;
using Hdl = websocketpp::connection_hdl;
}  // namespace

struct WsEndpoint::Impl {
  Handlers handlers;
  WsServer ws;
  std::map<uint64_t, Hdl> connections;
  std::map<Hdl, uint64_t, std::owner_less<Hdl>> ids;
  uint64_t next_id = 1;
  uint16_t port = 0;

  WsServer::connection_ptr connection(uint64_t id) const {
    auto it = connections.find(id);
    if (it == connections.end()) return nullptr;
    std::error_code ec;
    WsServer::connection_ptr con = const_cast<WsServer&>(ws).get_con_from_hdl(it->second, ec);
    return ec ? nullptr : con;
  }

  void forget(const Hdl& hdl) {
    auto it = ids.find(hdl);
    if (it == ids.end()) return;
    const uint64_t id = it->second;
    ids.erase(it);
    connections.erase(id);
    handlers.closed(id);
  }
};

WsEndpoint::WsEndpoint(asio::io_context& io, Handlers handlers, uint64_t max_message_bytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.handlers = std::move(handlers);
  m.ws.clear_access_channels(websocketpp::log::alevel::all);
  m.ws.clear_error_channels(websocketpp::log::elevel::all);
  std::error_code ec;
  m.ws.init_asio(&io, ec);
  m.ws.set_reuse_addr(true);
  m.ws.set_max_message_size(static_cast<size_t>(max_message_bytes));
  m.ws.set_max_http_body_size(0);
  m.ws.set_open_handshake_timeout(5000);
  m.ws.set_close_handshake_timeout(1000);
  m.ws.set_validate_handler([&m](Hdl hdl) {
    WsServer::connection_ptr con = m.ws.get_con_from_hdl(hdl);
    if (m.handlers.allow_origin(con->get_request_header("Origin"))) return true;
    con->set_status(websocketpp::http::status_code::forbidden);
    con->set_body("Origin not allowed\n");
    return false;
  });
  m.ws.set_open_handler([&m](Hdl hdl) {
    WsServer::connection_ptr con = m.ws.get_con_from_hdl(hdl);
    std::error_code endpoint_error;
    const auto endpoint = con->get_raw_socket().remote_endpoint(endpoint_error);
    const std::string remote =
        endpoint_error ? std::string("?")
                       : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    const uint64_t id = m.next_id++;
    m.connections.emplace(id, hdl);
    m.ids.emplace(hdl, id);
    m.handlers.opened(id, remote);
  });
  m.ws.set_close_handler([&m](Hdl hdl) { m.forget(hdl); });
  m.ws.set_fail_handler([&m](Hdl hdl) { m.forget(hdl); });
  m.ws.set_message_handler([&m](Hdl hdl, WsServer::message_ptr msg) {
    auto it = m.ids.find(hdl);
    if (it == m.ids.end()) return;
    m.handlers.message(it->second, msg->get_opcode() == websocketpp::frame::opcode::binary,
                       msg->get_payload());
  });
}

WsEndpoint::~WsEndpoint() = default;

bool WsEndpoint::listen(const std::string& address, uint16_t port, std::string* error) {
  Impl& m = *impl_;
  std::error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (!ec) m.ws.listen(asio::ip::tcp::endpoint(ip, port), ec);
  if (!ec) m.ws.start_accept(ec);
  if (ec) {
    *error = "cannot listen for WebSockets on " + address + ":" + std::to_string(port) + ": " +
             ec.message();
    return false;
  }
  const auto local = m.ws.get_local_endpoint(ec);
  m.port = ec ? 0 : local.port();
  return true;
}

uint16_t WsEndpoint::port() const {
  return impl_->port;
}

void WsEndpoint::stop_listening() {
  std::error_code ignored;
  if (impl_->ws.is_listening()) impl_->ws.stop_listening(ignored);
}

bool WsEndpoint::send(uint64_t connection, const uint8_t* data, size_t size) {
  WsServer::connection_ptr con = impl_->connection(connection);
  if (!con) return false;
  return !con->send(data, size, websocketpp::frame::opcode::binary);
}

size_t WsEndpoint::buffered_bytes(uint64_t connection) const {
  WsServer::connection_ptr con = impl_->connection(connection);
  return con ? con->get_buffered_amount() : 0;
}

void WsEndpoint::close(uint64_t connection, uint16_t code, const std::string& reason) {
  WsServer::connection_ptr con = impl_->connection(connection);
  if (!con) return;
  std::error_code ignored;
  con->close(code, reason, ignored);
}

}  // namespace lockstep::server
