/* test_reader_bad.c: placeholder. */
int main(void)
{
	return 0;
}
