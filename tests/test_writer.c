/* test_writer.c: placeholder. */
int main(void)
{
	return 0;
}
