package connect

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of AGENT_SECRET_KEY once decoded (AES-256).
const KeySize = 32

// sealVersion leads every sealed value, so that a later format (another
// cipher, a key id) can be told apart.
const sealVersion byte = 1

// ErrWrongKey is what opening a value sealed with another key (or changed
// since) gives: AES-GCM cannot tell the two apart.
var ErrWrongKey = errors.New("AGENT_SECRET_KEY does not open the stored connections: it is not the key they were sealed with")

// Sealer seals and opens values with AGENT_SECRET_KEY: AES-256-GCM, a
// fresh random nonce per write, and the value's owner (kind, person,
// server) as additional data, so that a sealed token moved to another
// person's row does not open there. The key is held in memory only.
type Sealer struct{ aead cipher.AEAD }

// ParseKey decodes AGENT_SECRET_KEY (standard or URL base64, padded or
// not) into a Sealer. The error names the variable and what is wrong,
// never the value.
func ParseKey(v string) (*Sealer, error) {
	v = strings.TrimSpace(v)
	var key []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err = enc.DecodeString(v); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errors.New("AGENT_SECRET_KEY is not base64 (make one with: openssl rand -base64 32)")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("AGENT_SECRET_KEY must be %d bytes once decoded, got %d (make one with: openssl rand -base64 32)", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("AGENT_SECRET_KEY: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("AGENT_SECRET_KEY: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plain for its owner.
func (s *Sealer) Seal(plain []byte, owner ...string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := append([]byte{sealVersion}, nonce...)
	return s.aead.Seal(out, nonce, plain, aad(owner)), nil
}

// Open decrypts what Seal made for the same owner; any other value, key
// or owner is ErrWrongKey.
func (s *Sealer) Open(sealed []byte, owner ...string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, ErrWrongKey
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad(owner))
	if err != nil {
		return nil, ErrWrongKey
	}
	return plain, nil
}

// aad is the additional data binding a sealed value to its owner.
func aad(owner []string) []byte {
	return []byte("agent-connect\x00" + strings.Join(owner, "\x00"))
}

// Required checks AGENT_SECRET_KEY when n servers sign in per person: a
// missing key is ErrNoKey (the pinned line), a malformed one says what is
// wrong. The service calls it first, before it reaches anything.
func Required(n int, key string) error {
	if n == 0 {
		return nil
	}
	if strings.TrimSpace(key) == "" {
		return ErrNoKey
	}
	_, err := ParseKey(key)
	return err
}
