module daifugo-arena/go-starter

go 1.19

require github.com/gorilla/websocket v1.5.0

replace github.com/gorilla/websocket => /usr/share/gocode/src/github.com/gorilla/websocket
